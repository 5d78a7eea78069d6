"""A prompt file for sampled answers (issue 19 item 3): the training prompts again, each under a sample's id.

    python recipes/sampled_prompts.py PROMPTS.jsonl OUT.jsonl [--draw N] [--seed S] [--split val]

Keeps the prompts of PROMPTS.jsonl (the file distill read for the main answers) whose rows train
(`hamburger.data.dataset.is_val_row` is false: validation prompts get no sampled answers) and gives each the id
``ID#s<N>`` (`sample_id`), every other field as it was, in an order shuffled with ``random.Random(S)``, so that any
prefix a distillation reached is a fair sample of the prompts (less the rows still decoding when it stopped: at most
a batch, the longer answers more often). ``--split val`` keeps the validation prompts instead:
sampled answers to measure with (`recipes/split_dataset.py` never trains on them). `hamburger distill --temperature T
--top-p P` on OUT then writes answer N of each prompt, drawn from a generator seeded by (its seed, the row id): a
rerun continues where it stopped, and the answers do not depend on batching.
"""

import argparse
import json
import random
from pathlib import Path

from hamburger.data.dataset import is_val_row, prompt_id, sample_id
from hamburger.data.io import read_jsonl

parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
parser.add_argument("prompts", help="the main answers' prompt file (rows with 'id' and 'prompt')")
parser.add_argument("out", help="the prompt file to write")
parser.add_argument("--draw", type=int, default=1, help="which sampled answer (>= 1; default 1)")
parser.add_argument("--seed", type=int, default=0, help="seed of the order (default 0)")
parser.add_argument("--split", choices=("train", "val"), default="train",
                    help="the training prompts (default) or the validation ones (to measure with, never trained on)")
args = parser.parse_args()
if args.draw < 1:
    parser.error("--draw must be >= 1 (0 is the main answer)")
rows = [r for r in read_jsonl(args.prompts) if is_val_row(r["id"]) == (args.split == "val")]
if any(prompt_id(r["id"]) != r["id"] for r in rows):
    parser.error(f"{args.prompts} already holds sample ids (ID#s<n>); give it the main answers' prompt file")
random.Random(args.seed).shuffle(rows)
Path(args.out).parent.mkdir(parents=True, exist_ok=True)
Path(args.out).write_text("".join(json.dumps({**r, "id": sample_id(r["id"], args.draw)}) + "\n" for r in rows))
print(f"{len(rows)} {args.split} prompts as draw {args.draw} -> {args.out}")
