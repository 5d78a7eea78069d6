"""The greedy answers to the prompts of a sampled-answer file, in its order, from a distilled file (gz or not).

    python greedy_rows.py SAMPLED.jsonl DISTILLED.jsonl[.gz] OUT.jsonl

Writes OUT.jsonl (+ the distilled file's meta beside it): for each row ``ID#s<n>`` of SAMPLED, the row ``ID``.
"""

import gzip
import json
import shutil
import sys
from pathlib import Path

from hamburger.data.dataset import prompt_id

sampled, distilled, out = (Path(a) for a in sys.argv[1:4])
wanted = [prompt_id(json.loads(line)["id"]) for line in sampled.open()]
keep = set(wanted)
opener = gzip.open if distilled.suffix == ".gz" else open
with opener(distilled, "rt") as f:
    rows = {r["id"]: r for r in map(json.loads, f) if r["id"] in keep}
missing = [w for w in wanted if w not in rows]
if missing:
    sys.exit(f"{distilled}: no greedy answer for {len(missing)} prompts, e.g. {missing[:3]}")
out.write_text("".join(json.dumps(rows[w]) + "\n" for w in wanted))
meta = distilled.with_name(distilled.name.removesuffix(".gz") + ".meta.json")
shutil.copy(meta, out.with_name(out.name + ".meta.json"))
print(f"{len(wanted)} greedy answers -> {out}")
