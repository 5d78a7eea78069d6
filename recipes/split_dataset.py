"""Split a segmented dataset into train / validation rows by a hash of each row's prompt id (1 in 20 -> val).

    python recipes/split_dataset.py DATASET.jsonl OUT_DIR [PROMPTS.jsonl] [--add SAMPLED.jsonl ...]

Every answer to one prompt falls on the same side (`hamburger.data.dataset.is_val_row`): sampled answers
(ids ``ID#s<n>``) of a train prompt train; validation keeps only the main answers (ids without the suffix), so it
stays the same set of rows whatever sampled rows are added, and sampled answers of validation prompts are dropped.
``--add`` appends the rows of more datasets (e.g. sampled answers, cut as DATASET was) after DATASET's; each must
share DATASET's tokenizer and group settings, and the split's meta (DATASET's) lists them under ``added``.
With PROMPTS.jsonl (the file distill read, rows with 'id' and 'prompt'), also writes
OUT_DIR/val_prompts.jsonl: the prompt texts of the validation rows (never trained on), for choosing
settings such as the default confidence without touching the evaluation prompts.
"""

import argparse
import json
import os
from pathlib import Path

from hamburger.data.dataset import is_val_row, prompt_id
from hamburger.data.io import read_jsonl, read_sidecar

parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
parser.add_argument("dataset", type=Path, help="the segmented dataset (main answers)")
parser.add_argument("out", type=Path, help="folder for train.jsonl, val.jsonl (+ their metas)")
parser.add_argument("prompts", nargs="?", help="the prompt file distill read: also write val_prompts.jsonl")
parser.add_argument("--add", type=Path, action="append", default=[], metavar="DATASET",
                    help="another segmented dataset whose rows join DATASET's (repeatable)")
args = parser.parse_args()
meta = read_sidecar(args.dataset)
rows = read_jsonl(args.dataset, tail="ignore", missing_ok=True)
for extra in args.add:
    other = read_sidecar(extra)
    for key in ("tokenizer", "max_steps", "settings"):
        if other.get(key) != meta.get(key):
            parser.error(f"{extra}: its {key} differs from {args.dataset}'s; cut both alike")
    rows += read_jsonl(extra, tail="ignore", missing_ok=True)
if args.add:
    meta = {**meta, "added": [str(p) for p in args.add]}
args.out.mkdir(parents=True, exist_ok=True)
parts, dropped = {"train": [], "val": []}, 0
for row in rows:
    if not is_val_row(row["id"]):
        parts["train"].append(row)
    elif prompt_id(row["id"]) == row["id"]:
        parts["val"].append(row)
    else:
        dropped += 1
for name in ("val", "train"):  # train.jsonl last: recipes take it as the sign that the split is done
    path, part = args.out / f"{name}.jsonl", parts[name]
    path.with_name(path.name + ".meta.json").write_text(json.dumps(meta, indent=1))
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text("".join(json.dumps(r) + "\n" for r in part))
    os.replace(tmp, path)  # whole or absent, even when killed
    print(name, len(part), "rows", sum(len(r["response_ids"]) for r in part), "response tokens")
if dropped:
    print("sampled answers of validation prompts dropped:", dropped)
if args.prompts:
    texts = {r["id"]: r["prompt"] for r in read_jsonl(args.prompts, tail="ignore", missing_ok=True)}
    val = [{"id": r["id"], "prompt": texts[r["id"]]} for r in parts["val"] if r["id"] in texts]
    (args.out / "val_prompts.jsonl").write_text("".join(json.dumps(r) + "\n" for r in val))
    print("val prompts", len(val))
