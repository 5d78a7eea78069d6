#!/usr/bin/env bash
# Does a prediction move the default mode's answer (verify_fold: history past the window folded at 8-bit keys and
# 4-bit values)? `hamburger generate` (its defaults, greedy, 200 tokens, one request at a time) on the first N dev
# prompts without a prediction, then with its own answer as the prediction at three commits: BEFORE (drafts of 10),
# GROW (drafts of 10 doubling to 64, also with a fold) and the working tree. Prints, per commit, how many answers are
# the one without a prediction, and the base forwards. No timing: it may run beside other work.
#   BEFORE=<commit> GROW=<commit> bash fold_check.sh > fold-check-HOST.txt
set -euo pipefail
cd "$(dirname "$0")/../.."
export HF_HUB_OFFLINE=1
VENV=$PWD/.venv N=${N:-8} T=$(mktemp -d)
trap 'for c in before grow; do git worktree remove --force $T/$c > /dev/null 2>&1 || true; done; rm -rf $T' EXIT
echo "# $(date -u +%FT%TZ) host $(hostname) | $(lscpu | sed -n 's/^Model name: *//p') | threads ${THREADS:-1} |" \
    "BEFORE $(git rev-parse --short ${BEFORE:?}) GROW $(git rev-parse --short ${GROW:?}) working tree at" \
    "$(git rev-parse --short HEAD) ($(git status --short -- hamburger | wc -l) files changed) | first $N dev prompts"
$VENV/bin/python - $N > $T/prompts.jsonl <<'PY'
import json, sys
from hamburger.data.prompts import build_prompts
for r in build_prompts(["self_instruct", "t0_prompts"], "dev", limit=int(sys.argv[1])):
    print(json.dumps({"prompt": r["prompt"]}))
PY
generate() {  # FOLDER PROMPTS OUT
    (cd $1 && $VENV/bin/python -m hamburger.cli generate --threads ${THREADS:-1} --max-new-tokens 200 --batch-size 1 \
        --prompts-file $2 --out $3 > /dev/null 2>&1)
}
generate $PWD $T/prompts.jsonl $T/plain.jsonl
$VENV/bin/python -c "
import json, sys
answers = [json.loads(l) for l in open(sys.argv[2])]
for line, answer in zip(open(sys.argv[1]), answers):
    print(json.dumps({**json.loads(line), 'prediction': answer['text']}))" $T/prompts.jsonl $T/plain.jsonl \
    > $T/predicted.jsonl
for c in before grow; do git worktree add -q --detach $T/$c $([ $c = before ] && echo $BEFORE || echo $GROW); done
for name in before grow now; do
    folder=$PWD
    [ $name = now ] || folder=$T/$name
    generate $folder $T/predicted.jsonl $T/$name.jsonl
    $VENV/bin/python -c "
import json, sys
plain, got = ([json.loads(l) for l in open(f)] for f in sys.argv[1:3])
same = sum(a['token_ids'] == b['token_ids'] for a, b in zip(plain, got))
print(f'{sys.argv[3]}: {same} of {len(plain)} answers the one without a prediction; base forwards',
      sum(b['forwards'] for b in got), 'against', sum(a['forwards'] for a in plain), 'without;',
      'tokens', sum(b['tokens'] for b in got), 'against', sum(a['tokens'] for a in plain))" \
        $T/plain.jsonl $T/$name.jsonl $name
done
