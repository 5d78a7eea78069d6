"""The one home of the merged layout (core/packing): groups -> slots, positions, where each group's features are."""

import pytest

from hamburger.core.packing import TrainBatch, group_starts, group_tensors, input_sizes, layout_slots, pack, pad_group


def test_group_helpers():
    assert group_starts([2, 1, 3]) == [0, 2, 3] and group_starts([]) == []
    assert pad_group([7, 8], 4) == [7, 8, 0, 0]
    tokens, sizes = group_tensors([[5], [6, 7, 8]], 3)
    assert tokens.tolist() == [[5, 0, 0], [6, 7, 8]] and sizes.tolist() == [1, 3]


def test_pack_lays_out_merged_and_unmerged_sequences():
    batch = TrainBatch([[1, 2, 3], [4, 5]], [[10, 11, 12, 13, 14], [20, 21]], [[2, 3], [1, 1]])
    p = pack(batch, 3)
    assert p.group_tokens.tolist() == [[10, 11, 0], [12, 13, 14], [20, 0, 0], [21, 0, 0]]
    assert p.group_sizes.tolist() == [2, 3, 1, 1]
    # row 0: prompt 1 2 3, then group [10 11] merged at the position of 11; row 1: prompt 4 5, then [20]
    assert p.valid.tolist() == [[True] * 4, [True, True, True, False]]
    assert p.positions.tolist() == [[0, 1, 2, 4], [0, 1, 2, 0]]
    assert [t.tolist() for t in p.merged_at] == [[0, 1], [3, 2]]
    assert p.input_tokens.tolist() == [[10, 11, 0], [20, 0, 0]] and p.input_sizes.tolist() == [2, 1]
    assert [t.tolist() for t in p.before_group] == [[0, 0, 1, 1], [2, 3, 1, 2]]
    assert p.ids.tolist() == [[1, 2, 3, 10, 11, 12, 13, 14], [4, 5, 20, 21, 0, 0, 0, 0]]
    assert [t.tolist() for t in p.response_at] == [[0] * 5 + [1] * 2, [2, 3, 4, 5, 6, 1, 2]]
    with pytest.raises(ValueError, match="exceeds max_steps"):
        pack(batch, 2)


def test_single_tail_feeds_a_groups_last_tokens_alone():
    assert [input_sizes(n) for n in (1, 2, 4)] == [[1], [2], [4]]
    assert [input_sizes(n, 1) for n in (1, 2, 3, 4)] == [[1], [1, 1], [2, 1], [3, 1]]
    assert [input_sizes(n, 2) for n in (1, 2, 3, 4)] == [[1], [1, 1], [1, 1, 1], [2, 1, 1]]
    batch = TrainBatch([[1, 2], [4]], [[10, 11, 12, 13, 14, 15], [20, 21, 22]], [[3, 2, 1], [2, 1]])
    p = pack(batch, 3, single_tail=1)
    assert p.group_tokens.tolist() == pack(batch, 3).group_tokens.tolist()  # the groups themselves do not change
    # row 0: prompt 1 2, then [10 11] merged at 11's position, 12 alone, 13 alone, 14 alone; row 1: prompt 4, 20, 21
    assert p.input_tokens.tolist() == [[10, 11, 0], [12, 0, 0], [13, 0, 0], [14, 0, 0], [20, 0, 0], [21, 0, 0]]
    assert p.input_sizes.tolist() == [2, 1, 1, 1, 1, 1]
    assert p.positions.tolist() == [[0, 1, 3, 4, 5, 6], [0, 1, 2, 0, 0, 0]]
    assert p.valid.tolist() == [[True] * 6, [True] * 3 + [False] * 3]
    assert [t.tolist() for t in p.merged_at] == [[0, 0, 0, 0, 1, 1], [2, 3, 4, 5, 1, 2]]
    # each group is predicted by the last input of the group before it
    assert [t.tolist() for t in p.before_group] == [[0, 0, 0, 1, 1], [1, 3, 5, 0, 2]]
    assert [layout_slots(len(q), g, 1) for q, g in zip(batch.prompt_ids, batch.groups)] == [6, 3]
    assert [t.tolist() for t in p.merged_tail] == [[[2, 3, 4, 5], [1, 2, 0, 0]],
                                                  [[True] * 4, [True, True, False, False]]]


def test_layout_names_round_trip():
    from hamburger.core.config import layout_name, parse_layout
    from hamburger.errors import HamburgerError

    for tail, fold, name in [(0, 0, "0"), (1, 0, "1"), (1, 1, "1f"), (2, 3, "2f3")]:
        assert layout_name(tail, fold) == name and parse_layout(name) == (tail, fold)
    assert parse_layout("1f1") == (1, 1) and layout_name(1, True) == "1f"
    with pytest.raises(HamburgerError, match="layout"):
        parse_layout("f")
