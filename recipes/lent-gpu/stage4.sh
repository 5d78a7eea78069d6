# stage4.sh (a call between calls 1 and 2, carrying .gpu and .gpu4): put the sampled answers made on a CPU where
# the recipe's SAMPLED step looks for them (DISTILLED with -s1, gzipped, its meta beside it), so the GPU distills only
# the rest. Without this call the recipe distills all of them on the GPU (up to DISTILL_SECONDS).
set -x
. .gpu/env.sh
[ -s .gpu4/distilled-s1.jsonl.gz ] || { echo "no .gpu4/distilled-s1.jsonl.gz: carry .gpu4 (prepare.sh)"; exit 2; }
mkdir -p "$(dirname "$DISTILLED")"
cp .gpu4/distilled-s1.jsonl.gz "${DISTILLED%.jsonl}-s1.jsonl.gz"
cp .gpu4/distilled-s1.jsonl.meta.json "${DISTILLED%.jsonl}-s1.jsonl.meta.json"
ls -la "$(dirname "$DISTILLED")"
