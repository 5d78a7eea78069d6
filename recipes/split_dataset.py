"""Split a segmented dataset into train / validation rows by a hash of the row id (1 in 20 -> val).

    python recipes/split_dataset.py DATASET.jsonl OUT_DIR [PROMPTS.jsonl]

With PROMPTS.jsonl (the file distill read, rows with 'id' and 'prompt'), also writes
OUT_DIR/val_prompts.jsonl: the prompt texts of the validation rows (never trained on), for choosing
settings such as the default confidence without touching the evaluation prompts.
"""

import hashlib
import json
import shutil
import sys
from pathlib import Path

from hamburger.data.io import read_jsonl

src, out = Path(sys.argv[1]), Path(sys.argv[2])
out.mkdir(parents=True, exist_ok=True)
rows = read_jsonl(src, tail="ignore", missing_ok=True)
parts = {"train": [], "val": []}
for row in rows:
    h = int(hashlib.sha256(row["id"].encode()).hexdigest()[:8], 16)
    parts["val" if h % 20 == 0 else "train"].append(row)
for name, part in parts.items():
    path = out / f"{name}.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in part))
    shutil.copy(src.with_name(src.name + ".meta.json"), path.with_name(path.name + ".meta.json"))
    print(name, len(part), "rows", sum(len(r["response_ids"]) for r in part), "response tokens")
if len(sys.argv) > 3:
    texts = {r["id"]: r["prompt"] for r in read_jsonl(sys.argv[3], tail="ignore", missing_ok=True)}
    val = [{"id": r["id"], "prompt": texts[r["id"]]} for r in parts["val"] if r["id"] in texts]
    (out / "val_prompts.jsonl").write_text("".join(json.dumps(r) + "\n" for r in val))
    print("val prompts", len(val))
