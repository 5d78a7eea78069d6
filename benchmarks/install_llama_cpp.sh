#!/usr/bin/env bash
# Build llama-cpp-python (llama.cpp's Python binding) into .venv for `hamburger bench --methods ...,llama_cpp`: the
# peer a CPU user runs a GGUF model with. PyPI has no CPU wheel of it, so pip compiles llama.cpp from its source
# (cmake and a C++ compiler; some minutes; for this machine's own instructions, -march=native).
# Not part of setup.sh or CI: the bench's other methods and the tests need none of it.
#   bash benchmarks/install_llama_cpp.sh
set -euo pipefail
cd "$(dirname "$0")/.."
VERSION=${LLAMA_CPP_PYTHON:-0.3.36}
command -v cmake >/dev/null && command -v c++ >/dev/null || {
    echo "install_llama_cpp.sh: needs cmake and a C++ compiler (Debian: apt-get install cmake g++)" >&2; exit 1; }
# LLAVA_BUILD=OFF: no multimodal library (the bench runs text models)
CMAKE_ARGS="${CMAKE_ARGS:-} -DLLAVA_BUILD=OFF" CMAKE_BUILD_PARALLEL_LEVEL=${CMAKE_BUILD_PARALLEL_LEVEL:-$(nproc)} \
    .venv/bin/pip install "llama-cpp-python==$VERSION"
.venv/bin/python -c "import llama_cpp; print('llama-cpp-python', llama_cpp.__version__)"
