# train_speed.sh: issue 19 item 2's figure on a lent GPU, training tokens/s of the full fine-tune + KL
# (configs/smollm2-gpu-full-fast.yaml: bf16 autocast, loss chunks, 32k positions per step, fused AdamW) uncompiled
# and compiled layer by layer (`compile_region: layer`; `stack` compiled the whole stack in 11 min on an H100,
# experiments/2026-11-25-gpu-full). Each arm a fresh process: 3 warm-up steps (they compile; `warmup_s` is their
# wall) and 10 timed ones on the first rows of the segmented data that prepare.sh copies into .gpu. Needs the machine
# set up by setup1.sh and join2.sh (or start2.sh). Lines append to $OUT/train_speed.jsonl.
# ARMS [eager layer] (add stack for the whole stack), ARM_SECONDS [300] per arm.
. .gpu/env.sh
zcat .gpu/speed-rows.jsonl.gz > /tmp/speed-rows.jsonl && cp .gpu/speed-rows.jsonl.meta.json /tmp/
for arm in ${ARMS:-eager layer}; do
    extra=(); [ "$arm" != eager ] && extra=(--compile --compile-region "$arm")
    echo "== $arm $(date -u +%H:%M:%S)"
    timeout "${ARM_SECONDS:-300}" python3 benchmarks/train_throughput.py --data /tmp/speed-rows.jsonl \
        --config configs/smollm2-gpu-full-fast.yaml --modes full+kl --device cuda --warmup 3 --steps 10 \
        "${extra[@]}" --out "$OUT/train_speed.jsonl" 2>&1 | grep -v '^DEBUG' | tail -3
    echo "== $arm rc ${PIPESTATUS[0]} $(date -u +%H:%M:%S)"  # (124: cut at ARM_SECONDS, warm-up included)
done
