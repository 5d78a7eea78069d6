#!/usr/bin/env bash
# Session 41: decode speed of verify_fold at its default fold with and without a fold reader, each against HF
# `generate` in the same run (benchmarks/verify_bench.py: 4 chat + 4 GSM8K dev prompts, 256 tokens, greedy, batch 1,
# fp32, 2 threads, methods interleaved prompt by prompt, the CLI's drafting: stop head 0.3, draft vocabulary, prompt
# lookup 10, the n-gram table). NAME=default: the shipped model (no reader); NAME=reader: the shipped model with the
# warm start at `lora_scope: after_fold` as its fold reader (`hamburger export --fold-reader`, built here). Output:
# reader_speed_NAME.json and .log here (reader_speed_NAME-TAG.* with TAG set: session 42's runs, TAG=fused, after the
# lean stack's merged adapter weights). Run on a quiet machine (pause any training: kill -STOP / -CONT).
# Session 43: the shipped model carries that reader for sampled rows only, so NAME=default greedy is unchanged, and
# SAMPLE=1 times sampled decoding (T 0.7, top-p 0.9, `verify_bench --sample`), where it acts; NAME=noreader: the
# shipped model without it (built here), the sampled control. Outputs reader_speed_NAME[-sampled][-TAG].*.
set -euo pipefail
cd "$(dirname "$0")/../.."
E=experiments/2026-11-27-keep-fold-full
R=runs/keep-fold
NAME=${NAME:-default}
OUT=$NAME${SAMPLE:+-sampled}${TAG:+-$TAG}
model=()
if [ "$NAME" = reader ]; then
    [ -f $R/warm-after-export/hamburger_config.json ] || .venv/bin/python $E/rebuild.py $R/warm-after-export after_fold
    [ -f $R/dm-reader/fold_reader.safetensors ] || .venv/bin/hamburger export --model hamburger/default_model \
        --out $R/dm-reader --fold-reader $R/warm-after-export
    model=(--model $R/dm-reader)
elif [ "$NAME" = noreader ]; then
    [ -f $R/dm-noreader/hamburger_config.json ] || { cp -r hamburger/default_model $R/dm-noreader &&
        .venv/bin/python -c "import json, sys; p = sys.argv[1]; m = json.load(open(p)); m.pop('fold_reader', None)
json.dump(m, open(p, 'w'), indent=2)" $R/dm-noreader/hamburger_config.json; }
    model=(--model $R/dm-noreader)
fi
POLICY=c0.3:v4096:p10:n@segments:60:0.45:first:steps=8:p=0.7
.venv/bin/python -m benchmarks.verify_bench "${model[@]}" --policies $POLICY --n-chat 4 --n-math 4 \
    --max-new-tokens 256 --threads 2 --skip-costs ${SAMPLE:+--sample} --out $E/reader_speed_$OUT.json \
    > $E/reader_speed_$OUT.log 2>&1
