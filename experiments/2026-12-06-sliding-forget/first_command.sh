#!/usr/bin/env bash
# The README's first command with --json, and the machine it ran on: the KV bytes and slots its example line shows
# (counted layer by layer since session 72). Run from the repository root:
#   bash experiments/2026-12-06-sliding-forget/first_command.sh > experiments/2026-12-06-sliding-forget/first_command.json
set -euo pipefail
.venv/bin/python - <<'PY'
import json, subprocess
from hamburger.bench.machine import machine_info
out = subprocess.run([".venv/bin/hamburger", "generate", "--json", "Name three colours."], check=True,
                     capture_output=True, text=True).stdout
result = json.loads(out)
keep = ("tokens", "forwards", "tau", "kv_slots", "kv_slots_ordinary", "kv_bytes", "kv_bytes_ordinary", "finish_reason")
print(json.dumps({"machine": machine_info(2, "float32"), "command": 'hamburger generate --json "Name three colours."',
                  "result": {k: result[k] for k in keep}, "kv_mib": round(result["kv_bytes"] / 2**20, 2)}, indent=1))
PY
