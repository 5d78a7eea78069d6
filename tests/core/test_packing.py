"""The one home of the merged layout (core/packing): groups -> slots, positions, where each group's features are."""

import pytest

from hamburger.core.packing import TrainBatch, group_starts, group_tensors, pack, pad_group


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
    assert [t.tolist() for t in p.merged_at] == [[0, 1], [3, 2]] and p.merged_group.tolist() == [0, 2]
    assert [t.tolist() for t in p.before_group] == [[0, 0, 1, 1], [2, 3, 1, 2]]
    assert p.ids.tolist() == [[1, 2, 3, 10, 11, 12, 13, 14], [4, 5, 20, 21, 0, 0, 0, 0]]
    assert [t.tolist() for t in p.response_at] == [[0] * 5 + [1] * 2, [2, 3, 4, 5, 6, 1, 2]]
    with pytest.raises(ValueError, match="exceeds max_steps"):
        pack(batch, 2)
