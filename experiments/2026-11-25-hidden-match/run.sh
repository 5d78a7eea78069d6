#!/usr/bin/env bash
# Issue 19, CPU: does matching the unmerged base's hidden states (`hidden_weight`) make adaptation cheaper?
# Two arms from the same warm start (the CPU line's step 606, bf16), same seed, data order and schedule as the line's
# own continuation (experiments/2026-11-24-cpu-v2-continue/run.sh), one thread each, niced: the control, and the
# same plus hidden_weight 20 on every base layer (stopped at step 213: tied), then 100 (ARMS="hidden100"). Each resumes
# where it stopped; ARMS picks (default control and hidden20, in parallel).
set -euo pipefail
cd "$(dirname "$0")/../.."
HB=${HB:-.venv/bin/hamburger}
export MKL_CBWR=AVX2
[ -s runs/cpu/all-split/train.jsonl ] || { echo "make the data first: experiments/2026-11-24-cpu-v2-continue/run.sh" >&2; exit 1; }
arm() {  # NAME [--set ...]
    local out=runs/cpu/ab-$1; shift
    if [ -f "$out/last/trainer_state.pt" ]; then
        nice -n 10 $HB train --out "$out" --resume
    else
        nice -n 10 $HB train --config configs/smollm2-lora-merged-v2-cpu.yaml \
            --set init=experiments/2026-11-24-cpu-v2-continue/warm_start --set seed=8 --set lr_base=1e-5 \
            --set lr_grafted=3e-5 --set min_lr=2e-6 --set eval_every=100 --set eval_on_start=false --set out="$out" "$@"
    fi
}
for a in ${ARMS:-control hidden20}; do
    case $a in
        control) arm control > "/tmp/ab-control.log" 2>&1 & ;;
        hidden20) arm hidden20 --set hidden_weight=20 > "/tmp/ab-hidden20.log" 2>&1 & ;;
        hidden100) arm hidden100 --set hidden_weight=100 > "/tmp/ab-hidden100.log" 2>&1 & ;;
        *) echo "unknown arm $a" >&2; exit 2 ;;
    esac
done
wait
