"""benchmarks/skip_path_split.py: the skip path's accuracy split by the slot it predicts from."""

import torch

from benchmarks.skip_path_split import skip_keys, skip_sources, split_accuracy
from hamburger.train.batching import Row, to_batch
from hamburger.train.trainer import fresh_mask
from hamburger.train.objective import HEAD, batch_stats, summarize
from tests.helpers import tiny_hamburger


def test_skip_sources():
    assert skip_sources([2, 1, 3, 1]) == ["prompt", "merged", "single", "merged"]
    assert skip_sources([1]) == ["prompt"]
    assert skip_keys([2, 1, 3, 1]) == [["prompt"], ["merged", "merged_2"], ["single"], ["merged", "merged_3"]]
    # a single tail: a 2-token group is fed as two single tokens, a 3-token one as a merged head and its last token
    assert skip_keys([2, 1, 3, 1], single_tail=1) == [["prompt"], ["single"], ["single"], ["tail", "tail_3"]]


def test_split_adds_up_to_the_trainers_skip_path_accuracy():
    model = tiny_hamburger("llama", seed=5)
    rows = [Row([1, 40, 41], [50, 51, 52, 53, 54, 55, 56], [2, 1, 3, 1]),
            Row([1, 60], [61, 62, 63, 64], [1, 1, 2]),
            Row([1, 70, 71, 72], [73, 74, 75], [3])]
    split = split_accuracy(model, rows, batch_size=2)
    assert {k: v["tokens"] for k, v in split.items()} == {"prompt": 3, "merged": 2, "merged_2": 1,
                                                           "merged_3": 1, "single": 3, "micro_2": 4, "micro_3": 2}
    with torch.no_grad():
        s = batch_stats(model.training_forward(to_batch(rows)), 4, 0, 0)
    # At the prompt's last token the model's choice is the base's own argmax: its NLL under the base is the least.
    with torch.no_grad():
        least = [-model.base(input_ids=torch.tensor([r.prompt_ids])).logits[0, -1].log_softmax(-1).max() for r in rows]
    torch.testing.assert_close(split["prompt"]["base_nll"], float(sum(least) / 3), rtol=1e-5, atol=1e-6)
    for v in split.values():
        assert v["base_nll"] > 0 and 0 <= v["implausible"] <= 1
    assert split["prompt"]["base_top1"] == 1  # there the model reads what the base reads and picks its argmax
    # rows whose tokens are the unmerged base's greedy choices: agreeing with the base is being right
    greedy = []
    for r in rows:
        ids = list(r.prompt_ids)
        with torch.no_grad():
            for _ in r.response_ids:
                ids.append(int(model.base(input_ids=torch.tensor([ids])).logits[0, -1].argmax()))
        greedy.append(Row(r.prompt_ids, ids[len(r.prompt_ids):], r.groups))
    for v in split_accuracy(model, greedy, batch_size=2).values():
        assert v["base_top1"] == v["accuracy"]
    skip = sum(split[k]["accuracy"] * split[k]["tokens"] for k in ("prompt", "merged", "single"))
    assert skip == s[HEAD].item()
    assert split["micro_2"]["accuracy"] * 4 == s[HEAD + 1].item()


def test_fresh_accuracy_counts_only_the_tokens_it_is_told_are_fresh():
    model = tiny_hamburger("llama", seed=5)
    rows = [Row([1, 40, 41], [50, 51, 52, 53, 54, 55, 56], [2, 1, 3, 1]), Row([1, 60], [61, 62, 63, 64], [1, 1, 2])]
    with torch.no_grad():
        out = model.training_forward(to_batch(rows))
    assert "token_acc_micro_fresh" not in summarize(batch_stats(out, 4, 0, 0), 4, 0.0, 0.0)
    every = summarize(batch_stats(out, 4, 0, 0, fresh=torch.ones_like(out.targets, dtype=torch.bool)), 4, 0.0, 0.0)
    assert every["token_acc_micro_fresh"] == every["token_acc_micro"]
    fresh = torch.tensor([i % 3 != 0 for i in range(out.targets.numel())])
    s = batch_stats(out, 4, 0, 0, fresh=fresh)
    right = (out.predictions == out.targets) & fresh
    for j, acc in enumerate(summarize(s, 4, 0.0, 0.0)["token_acc_micro_fresh"]):
        at = (out.micro_index == j) & fresh
        assert acc == (round(right[at].sum().item() / at.sum().item(), 4) if at.any() else None)
    assert torch.equal(s[:HEAD + 8], batch_stats(out, 4, 0, 0)[:HEAD + 8])  # the other sums do not change


def test_the_trainers_fresh_mask_follows_the_rows_tokens():
    model = tiny_hamburger("llama", seed=5)
    rows = [Row([1, 40], [50, 51, 52, 53, 50, 51, 52, 53, 54], [2, 3, 4]), Row([1, 60], [61, 62], [2])]
    with torch.no_grad():
        out = model.training_forward(to_batch(rows))
    assert fresh_mask(rows, out).tolist() == [True] * 7 + [False, True] + [True] * 2
    assert fresh_mask(rows[::-1], out) is None and fresh_mask(rows[:1], out) is None
