#!/usr/bin/env bash
# The sampled draw at batch 32 (batch_speed.sh's prompts and settings) with the code of commit BEFORE (its sampler
# sorts each step's vocabulary for top-p, `sampling.draw_tokens`) and of the working tree (`sampling.draw_rows`: no
# sort), alternately, ROUNDS times each, so a drift of the host's speed falls on both. Stop (kill -STOP) the
# background draw first. It times any change to the draw's code the same way (session 86: BEFORE=e512f97, continuous
# batching, ../2026-12-07-continuous-distill/).
#   BEFORE=8f3424c bash experiments/2026-12-07-distill-batch/sampler_speed.sh > \
#       experiments/2026-12-07-distill-batch/sampler-speed-HOST.txt
set -euo pipefail
cd "$(dirname "$0")/../.."
: "${BEFORE:?the commit whose sampler to time against}"
before=$(mktemp -d)
git archive "$BEFORE" hamburger | tar -x -C "$before"
. experiments/2026-12-03-sampled-rows/host.sh
changed=$(git diff --quiet HEAD -- hamburger || echo ' with changes')
echo "before: $(git rev-parse --short "$BEFORE"), after: $(git rev-parse --short HEAD)$changed"
for round in $(seq "${ROUNDS:-2}"); do
    for side in before after; do
        path=$([ "$side" = before ] && echo "$before" || echo "")
        timing=$(PYTHONPATH=$path BATCHES=32 bash experiments/2026-12-07-distill-batch/batch_speed.sh | tail -n 2)
        echo "$side, round $round: $(echo "$timing" | paste -sd ';')"
    done
done
rm -rf "$before"
