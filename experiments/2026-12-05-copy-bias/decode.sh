#!/usr/bin/env bash
# README.md's decode test: the shipped model in the folding layout with a lookup micro step (--micro-lookup Q,
# default 0.5), decoded as ../2026-12-05-cpu-lora-fold/run.sh judge decodes (120 GSM8K dev prompts, knob 0.9, 96
# tokens, the base's answers reused), into judge-lookup-Q/; then its bands and its pairing with the shipped weights
# -> judge-lookup-Q.md. CONT=1: also --micro-lookup-continues (judge-lookup-Q-cont/).
set -euo pipefail
cd "$(dirname "$0")/../.."
X=experiments/2026-12-05-copy-bias Q=${Q:-0.5} CONT=${CONT:-}
HB=${HB:-.venv/bin/hamburger} PY=${PY:-.venv/bin/python}
NAME=lookup-$Q${CONT:+-cont} FLAGS=(--micro-lookup $Q)
[ -z "$CONT" ] || FLAGS+=(--micro-lookup-continues)
E=runs/copy-bias/$NAME J=$X/judge-$NAME
[ -f $E/hamburger_config.json ] || $HB export --model hamburger/default_model --out $E --single-tail 1 --fold-tail 2 \
    "${FLAGS[@]}"
[ -s $J/summary.json ] || nice -n 5 $HB eval --model $E --tasks gsm8k --confidence 0.9 --limit 120 --max-new-tokens 96 \
    --threads 2 --reuse-base experiments/2026-12-03-default-knob-fold/paper-layout --out $J 2> $J.log
{ $PY experiments/2026-12-05-fold-distance/summary.py "lookup micro step q $Q${CONT:+, continues}=$J"
  echo; $PY experiments/2026-12-05-cpu-lora-fold/paired.py $J; } > $J.md
cat $J.md
