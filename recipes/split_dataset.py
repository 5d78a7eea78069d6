"""Split a segmented dataset into train / validation rows by a hash of the row id (1 in 20 -> val)."""

import hashlib
import json
import shutil
import sys
from pathlib import Path

src, out = Path(sys.argv[1]), Path(sys.argv[2])
out.mkdir(parents=True, exist_ok=True)
rows = [json.loads(line) for line in src.read_text().splitlines() if line.strip()]
parts = {"train": [], "val": []}
for row in rows:
    h = int(hashlib.sha256(row["id"].encode()).hexdigest()[:8], 16)
    parts["val" if h % 20 == 0 else "train"].append(row)
for name, part in parts.items():
    path = out / f"{name}.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in part))
    shutil.copy(src.with_name(src.name + ".meta.json"), path.with_name(path.name + ".meta.json"))
    print(name, len(part), "rows", sum(len(r["response_ids"]) for r in part), "response tokens")
