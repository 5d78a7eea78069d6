"""How much of the training data repeats itself (README.md, question 1; run.sh writes composition.md). By hand,
from the repository root: PYTHONPATH=. .venv/bin/python experiments/2026-12-05-repeats/composition.py

The committed greedy rows with their entropies (`data/segmented/`), cut as the GPU recipe cuts them (sliding 0.9,
4 tokens at most). A token is a *repeat* when its 4-gram (itself and the three tokens before it in the answer)
occurred earlier in the same answer (`hamburger.eval.plausibility.repeated_ngram_mask`; the tokens rep4 counts).
"""
from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

from benchmarks.skip_path_split import skip_sources
from hamburger.data.segment import SegmentSettings, segment_entropies
from hamburger.eval.plausibility import repeated_ngram_mask, repeated_ngram_rate

ROOT = Path(__file__).resolve().parents[2]
DATA = ROOT / "data/segmented/smollm2-135m-instruct.train.jsonl"
CUT = SegmentSettings(strategy="sliding", sliding_p=0.9, max_steps=4)
LOOP_REP4 = 0.5


def positions(groups: list[int]) -> list[str]:
    """For each token: what the slot it is predicted from holds, for a group's first token (`skip_sources`:
    `prompt`, `merged` or `single`), or `continue` for tokens 2..k of a group."""
    return [kind for n, source in zip(groups, skip_sources(groups)) for kind in [source] + ["continue"] * (n - 1)]


if __name__ == "__main__":
    meta = json.loads(DATA.with_name(DATA.name + ".meta.json").read_text())
    vocab = meta["entropy_vocab_size"]
    tokens, repeats, loop_tokens = Counter(), Counter(), Counter()
    loop_rows, loop_repeats = 0, 0  # (question 3: what `max_repeat: 0.5` leaves out)
    rows = [json.loads(line) for line in DATA.open()]
    for row in rows:
        ids = row["response_ids"]
        where = positions(segment_entropies(row["entropies"], CUT, vocab))
        looped, mask = repeated_ngram_rate(ids) > LOOP_REP4, repeated_ngram_mask(ids)
        loop_rows += looped
        loop_repeats += looped * sum(mask)
        for kind, rep in zip(where, mask):
            for key in ("all", kind):
                tokens[key] += 1
                repeats[key] += rep
                loop_tokens[key] += looped
    print(f"{len(rows):,} greedy answers of `{DATA.relative_to(ROOT)}`, cut sliding 0.9 (max 4 tokens)\n")
    print(f"| tokens | count | repeats | in loop answers (rep4 > {LOOP_REP4}) |")
    print("|---|---|---|---|")
    for key in ("all", "continue", "merged", "single", "prompt"):
        print(f"| {key} | {tokens[key]:,} | {repeats[key] / tokens[key]:.1%} | {loop_tokens[key] / tokens[key]:.1%} |")
    kept = tokens["all"] - loop_tokens["all"]
    print(f"\nLoop answers: {loop_rows:,} of {len(rows):,} ({loop_rows / len(rows):.1%}), holding "
          f"{loop_repeats / repeats['all']:.1%} of the repeats. Without them (`hamburger train`'s `max_repeat: 0.5`) "
          f"{kept:,} tokens are left, {(repeats['all'] - loop_repeats) / kept:.1%} of them repeats.")
