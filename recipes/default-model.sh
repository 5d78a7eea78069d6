#!/usr/bin/env bash
# Reproduce the shipped default model (hamburger/default_model/) from the bundled base, on CPU.
# Every step resumes where it stopped: rerun this script after an interruption.
# Threads: set THREADS (default 2). Times in the model card were measured on a 2-core CPU.
set -euo pipefail
cd "$(dirname "$0")/.."
THREADS=${THREADS:-2}
BASE=smollm2-135m-instruct
D=data/distilled/$BASE.train.jsonl
S=data/segmented/$BASE.train.jsonl

# 1. Training prompts: a fixed, deterministic selection from the data shipped in hamburger/data (dev rows excluded by hash).
[ -s data/prompts/train.jsonl ] || hamburger prompts --sources t0_prompts,self_instruct,gsm8k --split train \
    --limit 6000 --seed 0 --out data/prompts/train.jsonl
# The committed distilled rows ship gzipped (16135 rows: the first 2976 made on the CPU, the rest on a GPU).
[ -s "$D" ] || [ ! -s "$D.gz" ] || zcat "$D.gz" > "$D"
# 2. Self-distillation: the base's own greedy answers (resumable, hours on a CPU; the committed file
#    already holds its rows in the order they were made, so this is a no-op or a continuation here).
#    Rows are appended in batches sorted by length inside windows, so which prompts come first depends on
#    where earlier runs stopped: the shipped model used the first 1952 rows of the committed file (their
#    ids are the 1951 rows of the committed data/segmented file, one row was too long).
[ -n "${SKIP_DISTILL:-}" ] || hamburger distill --base $BASE --prompts data/prompts/train.jsonl --out $D \
    --max-new-tokens 256 --batch-size 32 --threads "$THREADS"
# 3. One scoring forward per response: entropies + token probabilities, cut by decreasing_v2 (stored).
#    ROWS=all uses every distilled row; the shipped model used 1952.
hamburger segment --data $D --out $S --strategy decreasing_v2 --max-steps 4 --batch-size 4 --threads "$THREADS" \
    $([ "${ROWS:-1952}" = all ] || echo --limit "${ROWS:-1952}")
# 4. The cut the default model trains on: a group grows while the base's entropy is below H(0.9).
rm -f runs/default-data/all.jsonl
hamburger segment --from-dataset $S --out runs/default-data/all.jsonl --strategy sliding --sliding-p 0.9 --max-steps 4
# 5. A fixed validation split (1 row in 20 by a hash of its id), never trained on.
python recipes/split_dataset.py runs/default-data/all.jsonl runs/default-data data/prompts/train.jsonl
# 6. Train, two passes over the data: pass 1 from the graft; pass 2 from pass 1's weights with a fresh,
#    lower cosine schedule and another data order. Checkpoints every 20 steps; a stopped pass resumes.
train_pass() {  # OUT, then extra settings
    local out=$1; shift
    if [ -f "$out/last/trainer_state.pt" ] && ! grep -q '"kind": "end"' "$out/metrics.jsonl" 2>/dev/null; then
        hamburger train --out "$out" --resume
    elif [ ! -f "$out/last/trainer_state.pt" ]; then
        hamburger train --config configs/smollm2-default.yaml --data runs/default-data/train.jsonl \
            --eval-data runs/default-data/val.jsonl --out "$out" --set threads="$THREADS" "$@"
    fi
}
train_pass runs/default --set stop_sees_token=false
# Pass 1 was trained before the stop head read the chosen token: widen it (zero weights, same function).
[ -d runs/default-1b ] || python recipes/upgrade_stop_head.py runs/default/last runs/default-1b
train_pass runs/default-2 --set init=runs/default-1b --set lr_grafted=2.5e-4 --set lr_base=1.5e-4 \
    --set warmup_steps=5 --set seed=1 --set epochs=0.6
# 7. Choose what ships on the validation prompts (never trained on, never reported). Measured
#    (benchmarks/results/default-model-calibration/): with its LoRA adapters the base drifts from its own
#    greedy answers even with no merging (ROUGE-L 36 at tau 1.00), so the shipped model keeps the
#    unchanged base and only the grafted modules; 0.9 is the lowest knob within a few points of the base.
for variant in with-lora without-lora; do
    flag=$([ $variant = without-lora ] && echo --drop-lora || true)
    [ -f runs/default-$variant/hamburger_config.json ] || \
        hamburger export --model runs/default-2/last --out runs/default-$variant --dtype float32 $flag
    [ -f runs/default-calibration-$variant/summary.json ] || \
        hamburger eval --model runs/default-$variant --tasks chat --chat-file runs/default-data/val_prompts.jsonl \
            --limit 20 --max-new-tokens 96 --confidence 0.5,0.6,0.7,0.8,0.9,0.95 --threads "$THREADS" \
            --out runs/default-calibration-$variant
done
# 8. Ship the grafted modules in bf16 next to the model card (the base stays the bundled one).
hamburger export --model runs/default-2/last --out runs/default-export --dtype bfloat16 --drop-lora \
    --default-confidence "${DEFAULT_CONFIDENCE:-0.9}"
cp runs/default-export/* hamburger/default_model/
# 9. Verify mode's draft vocabulary: the 4096 most frequent training-response tokens (added 2026-11-26 to v2).
python recipes/draft_vocab.py hamburger/default_model data/segmented/smollm2-135m-instruct.train.jsonl
