"""Distilled rows -> a training dataset with one-token groups, without the entropy forward of `segment`.

    python recipes/unsegmented_rows.py DISTILLED.jsonl OUT.jsonl [--max-steps 4]

For `stage: msd` with `msd_chains: all`, which starts a group at every response token and reads the base's
own distribution from its training forward, the data's groups and entropies are not used: this writes the
rows `segment` would write (chat-formatted prompt ids, the exact distilled response ids plus the stop id of
complete answers, the same row ids) with every group one token long, in seconds instead of hours on a CPU.
Only rows written by the same base (fingerprint) are taken; rows longer than --max-length are dropped.
"""

import argparse
import json
import sys
from pathlib import Path

from hamburger.core.base import load_base
from hamburger.data.dataset import vocab_hash
from hamburger.data.io import append_jsonl, read_jsonl, row_ids
from hamburger.engine.prompt import chat_prompt_ids

parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
parser.add_argument("data", help="distill output (.jsonl with prompt, response_token_ids, finish_reason)")
parser.add_argument("out", help="dataset to write (.jsonl + .meta.json); must not exist")
parser.add_argument("--max-steps", type=int, default=4, help="the model's max_steps (recorded in the meta)")
parser.add_argument("--max-length", type=int, default=1024, help="drop rows with more prompt + response tokens")
parser.add_argument("--base", default=None, help="base model spec (default: bundled)")
args = parser.parse_args()

out = Path(args.out)
if out.exists():
    sys.exit(f"{out} exists")
src_meta = json.loads(Path(f"{args.data}.meta.json").read_text())
_, tok, info = load_base(args.base, "float32")
if src_meta.get("base_fingerprint") != info.fingerprint:
    sys.exit(f"{args.data} was distilled by another base than {info.spec}")
system = src_meta.get("settings", {}).get("system")
records = read_jsonl(args.data, tail="ignore", missing_ok=True)
rows, dropped = [], 0
for rec, rid in zip(records, row_ids(records, "id", Path(args.data).stem)):
    complete = rec.get("finish_reason") != "length"
    response = list(rec["response_token_ids"]) + ([rec["stop_token_id"]] if complete else [])
    prompt = chat_prompt_ids(tok, rec["prompt"], system)
    if len(prompt) + len(response) > args.max_length or not response:
        dropped += 1
        continue
    rows.append({"id": rid, **({"source": rec["source"]} if "source" in rec else {}), "prompt_ids": prompt,
                 "response_ids": response, "complete": complete, "truncated": False, "groups": [1] * len(response)})
meta = {"kind": "hamburger-dataset", "format": 1, "strategy": "single", "max_steps": args.max_steps,
        "settings": {"strategy": "single", "max_steps": args.max_steps},
        "tokenizer": {"name": info.spec, "vocab_size": len(tok), "vocab_hash": vocab_hash(tok)},
        "base": info.spec, "base_fingerprint": info.fingerprint, "data": str(args.data),
        "stats": {"rows": len(rows), "response_tokens": sum(len(r["response_ids"]) for r in rows),
                  "too_long_dropped": dropped}}
append_jsonl(out, rows)
Path(f"{out}.meta.json").write_text(json.dumps(meta, indent=1))
print(f"{len(rows)} rows ({meta['stats']['response_tokens']} response tokens), {dropped} dropped -> {out}")
