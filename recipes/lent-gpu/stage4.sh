# stage4.sh (a call between calls 1 and 2, carrying .gpu and .gpu4): put the sampled answers made on a CPU where
# the recipe's SAMPLED step looks for them (DISTILLED with -sN, gzipped, its meta beside it), so the GPU distills only
# the rest, and the CPU's entropies of the answers where its `segment` steps write ($WORK/segmented.jsonl for the
# greedy rows, segmented-sN.jsonl for draw N), so they read only the rows the CPU did not reach. Without this call
# the recipe distills all the sampled answers (up to DISTILL_SECONDS) and runs the base over every answer.
set -x
. .gpu/env.sh
ls .gpu4/distilled-s*.jsonl.gz .gpu4/segmented*.jsonl.gz 2> /dev/null | grep -q . || \
    { echo "nothing to stage in .gpu4: carry .gpu4 (prepare.sh)"; exit 2; }
mkdir -p "$(dirname "$DISTILLED")" "$WORK"
for g in .gpu4/distilled-s*.jsonl.gz; do
    [ -s "$g" ] || continue
    n=${g#.gpu4/distilled-}; n=${n%.jsonl.gz}  # sN
    cp "$g" "${DISTILLED%.jsonl}-$n.jsonl.gz"
    cp "${g%.gz}.meta.json" "${DISTILLED%.jsonl}-$n.jsonl.meta.json"
done
for g in .gpu4/segmented*.jsonl.gz; do
    [ -s "$g" ] || continue
    t=$WORK/${g#.gpu4/}; t=${t%.gz}  # segmented.jsonl or segmented-sN.jsonl
    [ -s "$t" ] || { zcat "$g" > "$t" && cp "${g%.gz}.meta.json" "$t.meta.json"; }
done
# (poll.sh brings the greedy rows' entropies back only where the GPU added rows to those staged)
[ ! -s "$WORK/segmented.jsonl" ] || wc -l < "$WORK/segmented.jsonl" > "$WORK/.staged-segmented"
ls -la "$(dirname "$DISTILLED")" "$WORK"
