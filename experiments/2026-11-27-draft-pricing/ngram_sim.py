"""Free drafts replayed on the base's own greedy answers (answers.py): prompt lookup alone, and prompt lookup then
`NgramDrafts` (engine/ngrams.py) counted over the distilled training answers (data/distilled, the base's greedy answers
to the train split's prompts). Each step drafts, keeps the drafts that equal the answer's next tokens, and emits one
token more, as greedy verify does; no MSD (steps without a draft emit one token). Per prompt source: tokens per
step, the share of steps that drafted, and drafts kept per drafting step. ``--disjoint``: the table leaves out every
training row of a T0 template that any of the answers' prompts comes from (unseen templates).

    python experiments/2026-11-27-draft-pricing/ngram_sim.py experiments/2026-11-27-draft-pricing/answers_dev8-64.jsonl
"""

import argparse
import json
from collections import defaultdict

from hamburger.data.io import read_jsonl
from hamburger.engine.lookup import PromptLookup
from hamburger.engine.ngrams import NgramDrafts

DISTILLED = "data/distilled/smollm2-135m-instruct.train.jsonl.gz"
T0 = "../shared/data/self_instruct/t0_prompts.jsonl"
SETTINGS = [((3,), 2, 0.5), ((3, 2), 2, 0.5), ((3, 2), 3, 0.6), ((4, 3, 2), 2, 0.5), ((4, 3, 2), 3, 0.6),
            ((3, 2), 5, 0.7)]


def replay(answers: list[dict], drafter) -> dict[str, tuple[float, float, float]]:
    stats = defaultdict(lambda: [0, 0, 0, 0])  # steps, tokens, drafting steps, drafts kept in them
    for a in answers:
        prompt, answer, pos = a["prompt_ids"], a["answer_ids"], 0
        while pos < len(answer):
            drafts = drafter(prompt + answer[:pos], len(answer) - pos - 1)
            kept = 0
            while kept < len(drafts) and drafts[kept] == answer[pos + kept]:
                kept += 1
            s = stats[a["id"].split(":")[0].split("/")[0]]
            s[0], s[1], s[2], s[3] = s[0] + 1, s[1] + kept + 1, s[2] + bool(drafts), s[3] + kept
            pos += kept + 1
    return {k: (round(v[1] / v[0], 3), round(v[2] / v[0], 3), round(v[3] / max(1, v[2]), 3))
            for k, v in sorted(stats.items())}


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("answers")
    p.add_argument("--disjoint", action="store_true")
    args = p.parse_args()
    answers = read_jsonl(args.answers)
    rows = read_jsonl(DISTILLED)
    if args.disjoint:
        t0 = read_jsonl(T0)
        held = {t0[int(a["id"].split(":")[1])]["template"] for a in answers if a["id"].startswith("t0:")}
        rows = [r for r in rows if not (r["id"].startswith("t0:") and t0[int(r["id"].split(":")[1])]["template"]
                                        in held)]
        print(f"unseen templates: {len(held)} held out; table from {len(rows)} training answers")
    print(f"{len(answers)} answers; per source: (tokens per step, share of steps drafting, drafts kept per drafting "
          f"step)")
    lookup = PromptLookup()
    print(f"  prompt lookup alone{'':29} {replay(answers, lookup.propose)}")
    for orders, min_count, min_share in SETTINGS:
        table = NgramDrafts.count((r["response_token_ids"] for r in rows), 49152, orders, min_count, min_share)
        print(f"  lookup, then n-grams {orders} count>={min_count} share>={min_share} ({len(table)} contexts) "
              f"{replay(answers, lambda h, room: lookup.propose(h, room) or table.propose(h, room))}")


if __name__ == "__main__":
    main()
