"""Rows, distinct ids and response tokens of every committed sampled draw (session 67), and what each draw adds
beside the greedy answers and the draws before it (session 68):
    ../../.venv/bin/python counts.py > counts.md

What a draw adds, over its rows whose prompt also has a greedy row (ids `ID` and `ID#sN`):
- `= greedy`: answers whose token ids equal the greedy answer's to the same prompt; `= earlier draw`: equal to an
  earlier draw's answer to it;
- `new 4-grams`: of each answer's distinct token 4-grams, the share found in neither the greedy answer nor any
  earlier draw's answer to the same prompt, pooled over answers (the text a further epoch sees for the first time).

And how much each file repeats itself (repetition is the band the default model fails in `hamburger` mode): the
mean over answers of `rep4` (`hamburger.eval.plausibility.repeated_ngram_rate`, the judge's measure), the share of
answers with rep4 above 0.5 (loops) and the share cut at the token limit (`finish_reason` "length").
"""
from __future__ import annotations

import gzip
import json
import re
from pathlib import Path

from hamburger.eval.plausibility import repeated_ngram_rate

DISTILLED = Path(__file__).resolve().parents[2] / "data/distilled"
GREEDY = "smollm2-135m-instruct.train.jsonl.gz"


def read_rows(path: Path) -> list[dict]:
    with gzip.open(path, "rt") as f:
        return [json.loads(line) for line in f]


def four_grams(ids: list[int]) -> set[tuple[int, ...]]:
    return {tuple(ids[i:i + 4]) for i in range(len(ids) - 3)}


def draw_number(path: Path) -> int:
    return int(re.search(r"-s(\d+)\.jsonl\.gz$", path.name).group(1))


if __name__ == "__main__":
    draws = sorted(DISTILLED.glob("*-s*.jsonl.gz"), key=draw_number)
    rows = {path: read_rows(path) for path in draws}
    print("| draw | rows | distinct ids | response tokens |")
    print("|---|---|---|---|")
    for path in draws:
        tokens = sum(len(r["response_token_ids"]) for r in rows[path])
        print(f"| {path.name} | {len(rows[path]):,} | {len({r['id'] for r in rows[path]}):,} | {tokens:,} |")

    greedy_rows = read_rows(DISTILLED / GREEDY)
    greedy = {r["id"]: r["response_token_ids"] for r in greedy_rows}
    earlier: dict[str, list[list[int]]] = {}  # prompt id -> the earlier draws' answers to it
    print()
    print("| draw | rows with a greedy row | = greedy | = earlier draw | new 4-grams |")
    print("|---|---|---|---|---|")
    for path in draws:
        n = same_greedy = same_earlier = new = total = 0
        for r in rows[path]:
            prompt_id = r["id"].rsplit("#s", 1)[0]
            if prompt_id not in greedy:
                continue
            ids, before = r["response_token_ids"], earlier.get(prompt_id, [])
            n += 1
            same_greedy += ids == greedy[prompt_id]
            same_earlier += any(ids == other for other in before)
            seen = four_grams(greedy[prompt_id]).union(*(four_grams(other) for other in before))
            grams = four_grams(ids)
            new += len(grams - seen)
            total += len(grams)
        for r in rows[path]:
            earlier.setdefault(r["id"].rsplit("#s", 1)[0], []).append(r["response_token_ids"])
        print(f"| {path.name} | {n:,} | {same_greedy / n:.1%} | {same_earlier / n:.1%} | {new / total:.1%} |")

    print()
    print("| file | answers | mean rep4 | rep4 > 0.5 | cut at the limit |")
    print("|---|---|---|---|---|")
    for name, answers in [(GREEDY, greedy_rows)] + [(path.name, rows[path]) for path in draws]:
        rep4 = [repeated_ngram_rate(r["response_token_ids"]) for r in answers]
        loops = sum(rate > 0.5 for rate in rep4)
        cut = sum(r["finish_reason"] == "length" for r in answers)
        print(f"| {name} | {len(answers):,} | {sum(rep4) / len(rep4):.3f} | {loops / len(answers):.1%} "
              f"| {cut / len(answers):.1%} |")
