#!/usr/bin/env bash
# What a data step costs when every row is already there (a GPU window's data call after stage4.sh, or a rerun):
# the recipe's `distill` of the greedy answers and `segment` of their entropies (recipes/gpu-default-model.sh, on the
# CPU), at commit OLD and at the working tree, alternated, REPS times each. Stop any other torch job first.
#   OLD=<commit> bash noop_cost.sh > noop-cost-HOST.txt
set -euo pipefail
cd "$(dirname "$0")/../.."
export HF_HUB_OFFLINE=1
VENV=$PWD/.venv  # (`python -m` reads the package from the folder it runs in: the old tree's, or this one's)
T=$(mktemp -d)
trap 'git worktree remove --force $T/old > /dev/null 2>&1 || true; rm -rf $T' EXIT
git worktree add -q --detach $T/old "${OLD:?give OLD=<commit>}"
D=$PWD/data/distilled/smollm2-135m-instruct.train.jsonl
S=$PWD/data/segmented/smollm2-135m-instruct.train-full.jsonl
P=$PWD/data/prompts/train-all.jsonl
[ -s $D ] || zcat $D.gz > $D
[ -s $S ] || zcat $S.gz > $S
cp $D.meta.json $T/distill.meta.json  # each step begins from these (a step at OLD rewrites the segment sidecar
cp $S.meta.json $T/segment.meta.json  # without the rows it left out, which NEW reads)
echo "# $(date -u +%FT%TZ) host $(hostname) | $(lscpu | sed -n 's/^Model name: *//p') | $(nproc) cores"
echo "# $(.venv/bin/python -c 'import sys, torch, transformers; print("python", sys.version.split()[0], "torch",
    torch.__version__, "transformers", transformers.__version__, "threads", torch.get_num_threads())')"
echo "# OLD $(git -C $T/old rev-parse --short HEAD), NEW the working tree at $(git rev-parse --short HEAD)" \
    "($(git status --short -- hamburger | wc -l) files changed); ${D#$PWD/}: $(wc -l < $D) rows," \
    "${S#$PWD/}: $(wc -l < $S) rows"
step() {  # VERSION NAME: wall seconds of one no-op step
    local path=$PWD
    [ "$1" = old ] && path=$T/old
    local cmd=(distill --base smollm2-135m-instruct --prompts $P --out $D
               --max-new-tokens 256 --batch-size 512 --device cpu)
    [ "$2" = segment ] && cmd=(segment --data $D --out $S --strategy decreasing_v2 --max-steps 4 --batch-size 64
                               --device cpu)
    cp $T/distill.meta.json $D.meta.json
    cp $T/segment.meta.json $S.meta.json
    local t0=$(date +%s.%N)
    (cd $path && $VENV/bin/python -m hamburger.cli "${cmd[@]}") > $T/log 2>&1 || { cat $T/log >&2; exit 1; }
    local dt=$(awk "BEGIN { printf \"%.2f\", $(date +%s.%N) - $t0 }")
    echo "$1 $2 $dt s | $(grep -o 'nothing to do[^:]*' $T/log || echo loaded the base)"
}
for rep in $(seq ${REPS:-3}); do
    for name in distill segment; do step old $name; step new $name; done
done
cp $T/distill.meta.json $D.meta.json
cp $T/segment.meta.json $S.meta.json
