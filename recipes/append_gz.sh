#!/usr/bin/env bash
# append_gz.sh FILE: append the whole lines of FILE that FILE.gz lacks to FILE.gz, as a new gzip member (the earlier
# bytes unchanged, so git stores little), for the row files a CPU job writes between GPU windows and commits gzipped
# (experiments/2026-12-03-sampled-rows/cpu_distill.sh, experiments/2026-12-07-cpu-segment/cpu_segment.sh). A running
# job's half-written last line is left for later.
set -euo pipefail
F=$1
[ -s "$F" ] || { echo "$F: not begun"; exit 0; }
have=0
whole=$(wc -l < "$F")  # (the newline-ended lines)
[ ! -s "$F.gz" ] || have=$(zcat "$F.gz" | wc -l)
[ "$whole" -le "$have" ] || sed -n "$((have + 1)),${whole}p" "$F" | gzip -9 >> "$F.gz"
echo "$F.gz: $have -> $(zcat "$F.gz" | wc -l) rows"
