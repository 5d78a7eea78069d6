"""How the n-gram table's free drafts grow with the answers it is counted over: the shipped setting (orders 3 and 2,
min_count 3, min_share 0.6) counted over a random 1/8, 1/4, 1/2 and all of the base's greedy answers to the train
split's prompts, replayed on the dev answers of session 35 (prompt lookup, then the table; no MSD), as
../2026-11-27-draft-pricing/ngram_sim.py replays them.

    python experiments/2026-11-27-table-scaling/scaling.py > experiments/2026-11-27-table-scaling/scaling.txt
"""

import importlib.util
import random

from hamburger.data.io import read_jsonl
from hamburger.engine.lookup import PromptLookup
from hamburger.engine.ngrams import NgramDrafts

SIM = "experiments/2026-11-27-draft-pricing/ngram_sim.py"
ANSWERS = "experiments/2026-11-27-draft-pricing/answers_dev8-64.jsonl"
CODE = "experiments/2026-11-27-draft-pricing/answers_code0-24.jsonl"


def main() -> None:
    spec = importlib.util.spec_from_file_location("ngram_sim", SIM)
    sim = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(sim)
    rows = read_jsonl(sim.DISTILLED)
    answers = read_jsonl(ANSWERS) + read_jsonl(CODE)
    lookup = PromptLookup()
    print(f"{len(answers)} dev answers; per source: (tokens per step, share of steps drafting, drafts kept per "
          f"drafting step)")
    for share in (0.125, 0.25, 0.5, 1.0):
        for seed in ((0, 1) if share < 1 else (0,)):
            subset = random.Random(seed).sample(rows, round(share * len(rows)))
            table = NgramDrafts.count((r["response_token_ids"] for r in subset), 49152, (3, 2), 3, 0.6)

            def drafter(text, room):
                return lookup.propose(text, room) or table.propose(text, room)
            tokens = sum(len(r["response_token_ids"]) for r in subset)
            print(f"  {share:5.3f} of the answers (seed {seed}, {len(subset)} answers, {tokens} tokens, "
                  f"{len(table)} contexts): {sim.replay(answers, drafter)}", flush=True)


if __name__ == "__main__":
    main()
