# judge.sh NAME...: the teacher-forced reading of each keep-fold run's export (/tmp/work/NAME-export, or poll.sh
# final's NAME-partial of an unfinished run) at verify_fold's default fold and with nothing folded
# (experiments/2026-11-26-fold-policies/reading.py, copied into .gpu by prepare.sh with the 80 fixed dev answers it
# reads; on the machine's 16 CPU cores), so that a full fine-tune, whose export is too big to bring back, is judged
# where it trained. Needs the dev prompts' sources in the tree (`git add -f hamburger/data/self_instruct/
# t0_prompts.jsonl.gz hamburger/data/gsm8k/train.jsonl.gz` before the call). Output: $OUT/reading-NAME.txt and
# .json (compare with experiments/2026-11-27-keep-fold-full/reading-keep-default.txt).
. .gpu/env.sh
for name in "$@"; do
    model=/tmp/work/$name-export
    [ -f $model/hamburger_config.json ] || model=/tmp/work/$name-partial
    [ -f $model/hamburger_config.json ] || { echo "no /tmp/work/$name-export or -partial"; continue; }
    python3 .gpu/fold-policies/reading.py --model $model --name $name --threads 16 \
        --policies segments:100000,segments:60:0.45:first:steps=8:p=0.7 > $OUT/reading-$name.txt 2> /tmp/work/judge.err
    cp .gpu/fold-policies/reading-$name.json $OUT/ && cat $OUT/reading-$name.txt || tail -5 /tmp/work/judge.err
done
