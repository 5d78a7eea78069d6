"""How much of the training data repeats itself (README.md, question 1):
    ../../.venv/bin/python composition.py > composition.md

The committed greedy rows with their entropies (`data/segmented/`), cut as the GPU recipe cuts them (sliding 0.9,
4 tokens at most). A token is a *repeat* when its 4-gram (itself and the three tokens before it in the answer)
occurred earlier in the same answer (`hamburger.eval.plausibility.repeated_ngram_mask`; the tokens rep4 counts).
"""
from __future__ import annotations

import json
from pathlib import Path

from hamburger.data.segment import SegmentSettings, segment_entropies
from hamburger.eval.plausibility import repeated_ngram_mask, repeated_ngram_rate

ROOT = Path(__file__).resolve().parents[2]
DATA = ROOT / "data/segmented/smollm2-135m-instruct.train.jsonl"
CUT = SegmentSettings(strategy="sliding", sliding_p=0.9, max_steps=4)
LOOP_REP4 = 0.5


def positions(groups: list[int]) -> list[str]:
    """For each token: `first` (the response's first token), `skip` (first of a group after a group of 2+),
    `after_single` (first of a group after a one-token group) or `continue` (2nd..kth of a group)."""
    out, before = [], 0
    for n in groups:
        out.append("first" if not before else "skip" if before > 1 else "after_single")
        out += ["continue"] * (n - 1)
        before = n
    return out


if __name__ == "__main__":
    meta = json.loads(DATA.with_name(DATA.name + ".meta.json").read_text())
    vocab = meta["entropy_vocab_size"]
    tokens, repeats, loop_tokens = {}, {}, {}
    rows = [json.loads(line) for line in DATA.open()]
    for row in rows:
        ids = row["response_ids"]
        where = positions(segment_entropies(row["entropies"], CUT, vocab))
        looped = repeated_ngram_rate(ids) > LOOP_REP4
        for kind, rep in zip(where, repeated_ngram_mask(ids)):
            for key in ("all", kind):
                tokens[key] = tokens.get(key, 0) + 1
                repeats[key] = repeats.get(key, 0) + rep
                loop_tokens[key] = loop_tokens.get(key, 0) + looped
    print(f"{len(rows):,} greedy answers of `{DATA.relative_to(ROOT)}`, cut sliding 0.9 (max 4 tokens)\n")
    print(f"| tokens | count | repeats | in loop answers (rep4 > {LOOP_REP4}) |")
    print("|---|---|---|---|")
    for key in ("all", "continue", "skip", "after_single", "first"):
        print(f"| {key} | {tokens[key]:,} | {repeats[key] / tokens[key]:.1%} | {loop_tokens[key] / tokens[key]:.1%} |")
