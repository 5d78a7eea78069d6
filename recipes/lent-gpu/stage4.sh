# stage4.sh (a call between calls 1 and 2, carrying .gpu and .gpu4): put the sampled answers made on a CPU where
# the recipe's SAMPLED step looks for them (DISTILLED with -sN, gzipped, its meta beside it), so the GPU distills only
# the rest. Without this call the recipe distills all of them on the GPU (up to DISTILL_SECONDS).
set -x
. .gpu/env.sh
ls .gpu4/distilled-s*.jsonl.gz > /dev/null || { echo "no .gpu4/distilled-s*.jsonl.gz: carry .gpu4 (prepare.sh)"; exit 2; }
mkdir -p "$(dirname "$DISTILLED")"
for g in .gpu4/distilled-s*.jsonl.gz; do
    n=${g#.gpu4/distilled-}; n=${n%.jsonl.gz}  # sN
    cp "$g" "${DISTILLED%.jsonl}-$n.jsonl.gz"
    cp "${g%.gz}.meta.json" "${DISTILLED%.jsonl}-$n.jsonl.meta.json"
done
ls -la "$(dirname "$DISTILLED")"
