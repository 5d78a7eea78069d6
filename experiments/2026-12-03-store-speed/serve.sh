#!/usr/bin/env bash
# Rule 3 (README.md): session 56's check 3 (`../2026-12-03-default-mode/serve.sh`: the server's load test, 16 dev
# prompts, 128 tokens, greedy, verify and verify_fold at server batch 1, 2, 4 and 8, interleaved) on this code, into
# serve/. Run it alone on the machine (each record skipped when done):
#   bash experiments/2026-12-03-store-speed/serve.sh
set -euo pipefail
cd "$(dirname "$0")/../.."
OUT=experiments/2026-12-03-store-speed/serve bash experiments/2026-12-03-default-mode/serve.sh
