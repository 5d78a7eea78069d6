# start3.sh (call 3 of a continuation, carrying .gpu and .gpu3): train RUNS [lora-both lora-fold] from the warm
# start in .gpu3/warm_start (prepare.sh WARM=FOLDER put it there), detached, on the data call 2 made (RUNS=data).
# MORE_SET adds `--set k=v` options; the defaults are those of the 2026-11-24 stages 2-3 (32k positions per step).
set -x
. .gpu/env.sh
[ -f .gpu3/warm_start/hamburger_config.json ] || { echo "no .gpu3/warm_start: carry .gpu3 (prepare.sh WARM=...)"; exit 2; }
[ -s /tmp/work/train.jsonl ] || { echo "no /tmp/work/train.jsonl: call 2 (RUNS=data) did not finish"; exit 2; }
pgrep -f running-pipeline >/dev/null && { echo "a pipeline is still running"; exit 2; }
cp recipes/gpu-default-model.sh recipes/.running-pipeline.sh
RUNS=${RUNS:-lora-both lora-fold} \
TRAIN_SET="--set init=$PWD/.gpu3/warm_start ${MORE_SET:---set max_tokens=32768 --set warmup_steps=20 --set save_every=40 --set eval_every=100 --set epochs=3}" \
    setsid nohup bash recipes/.running-pipeline.sh >> /tmp/work/pipeline.log 2>&1 < /dev/null &
sleep 5
