"""Compare two `segment` outputs of the same answers whose entropies came two ways (distill's recorded ones, and a
forward of `segment`'s own): how far the entropies and probabilities are apart, and how many rows and group starts
differ under the recipe's two cuts (decreasing_v2, 4 steps: the stored one; sliding at H(0.9): the training cut).

    python compare.py RECORDED.jsonl RECOMPUTED.jsonl
"""

import sys

from hamburger.data.dataset import load_dataset
from hamburger.data.segment import SegmentSettings, entropy_threshold, segment_entropies, sliding


def starts(groups: list[int]) -> set[int]:
    """The token indices where the groups begin."""
    out, at = set(), 0
    for g in groups:
        out.add(at)
        at += g
    return out


def main(recorded_path: str, recomputed_path: str) -> None:
    recorded, meta = load_dataset(recorded_path)
    recomputed = {r["id"]: r for r in load_dataset(recomputed_path)[0]}
    vocab = meta["entropy_vocab_size"]
    cuts = {"decreasing_v2": lambda e: segment_entropies(e, SegmentSettings(), vocab),
            "sliding 0.9": lambda e: sliding(e, 4, entropy_threshold(0.9, vocab))}
    diffs, prob_diffs, tokens = [], [], 0
    rows_differ, starts_differ, all_starts = dict.fromkeys(cuts, 0), dict.fromkeys(cuts, 0), dict.fromkeys(cuts, 0)
    for a in recorded:
        b = recomputed[a["id"]]
        assert a["response_ids"] == b["response_ids"], a["id"]
        diffs += [abs(x - y) for x, y in zip(a["entropies"], b["entropies"])]
        prob_diffs += [abs(x - y) for x, y in zip(a["token_probs"], b["token_probs"])]
        tokens += len(a["response_ids"])
        for name, cut in cuts.items():
            s, t = starts(cut(a["entropies"])), starts(cut(b["entropies"]))
            rows_differ[name] += s != t
            starts_differ[name] += len(s ^ t)
            all_starts[name] += len(t)
    diffs.sort()
    print(f"{len(recorded)} rows, {tokens} response tokens | entropy |recorded - recomputed| (nats): mean "
          f"{sum(diffs) / len(diffs):.5f}, median {diffs[len(diffs) // 2]:.4f}, 99th percentile "
          f"{diffs[int(0.99 * (len(diffs) - 1))]:.4f}, max {diffs[-1]:.4f} | probability: max {max(prob_diffs):.4f}")
    for name in cuts:
        print(f"{name}: {rows_differ[name]} of {len(recorded)} rows cut otherwise; {starts_differ[name]} group "
              f"starts differ of {all_starts[name]}")


if __name__ == "__main__":
    main(*sys.argv[1:])
