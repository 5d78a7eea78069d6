# poll.sh SECONDS [final]: follow the pipeline, copy what is new to $OUT; with "final", export unfinished runs.
. .gpu/env.sh
end=$((SECONDS + $1))
# every run the recipe has started (a folder with config.json under /tmp/work), found rather than listed: session 32's
# run was missing from a hand-kept list and its export did not come back until an extra call
run_names() { for c in /tmp/work/*/config.json; do [ -f "$c" ] && basename "$(dirname "$c")"; done; }
ship() {  # NAME DIR: tar + split a finished export into $OUT
    [ -f /tmp/work/.sent-$1 ] && return
    # a call brings back < 64 MiB: a full fine-tune's export (534 MiB, 2026-11-25) would fill $OUT for many calls and
    # keep the small exports from coming back, so it stays on the machine and only its metrics return
    if [ "$(du -sm "$2" | cut -f1)" -gt 60 ]; then echo "ship: $1 is $(du -sh "$2" | cut -f1), too big to bring back"; touch /tmp/work/.sent-$1; return; fi
    tar -C "$(dirname $2)" -cf /tmp/work/$1.tar "$(basename $2)" && split -b 15m -d /tmp/work/$1.tar $OUT/$1.tar.part
    touch /tmp/work/.sent-$1
}
while [ $SECONDS -lt $end ]; do
    if grep -q "== .* segment" /tmp/work/pipeline.log 2>/dev/null && [ ! -f /tmp/work/.sent-distilled ]; then
        gzip -1 -c $DISTILLED > $OUT/distilled.jsonl.gz && cp $DISTILLED.meta.json $OUT/ && touch /tmp/work/.sent-distilled
    fi
    # the base's entropies of every answer (about 21 MB gzipped, scaled from data/segmented's 1,951 rows): with them
    # the CPU line re-cuts all rows by `hamburger segment --from-dataset` instead of ~2 hours of base forwards on 2
    # cores; not where they are the CPU's own (stage4.sh) and the GPU added no row
    if grep -q "== .* train" /tmp/work/pipeline.log 2>/dev/null && [ -s /tmp/work/segmented.jsonl ] \
        && [ ! -f /tmp/work/.sent-segmented ] \
        && [ "$(wc -l < /tmp/work/segmented.jsonl)" -gt "$(cat /tmp/work/.staged-segmented 2>/dev/null || echo 0)" ]; then
        gzip -1 -c /tmp/work/segmented.jsonl > $OUT/segmented.jsonl.gz && cp /tmp/work/segmented.jsonl.meta.json $OUT/ \
            && touch /tmp/work/.sent-segmented
    fi
    for r in $(run_names); do [ -f /tmp/work/$r-export/hamburger_config.json ] && ship $r /tmp/work/$r-export; done
    pgrep -f running-pipeline >/dev/null || break
    sleep 5  # (the call ends at most 5 s after the pipeline: a window has 15 minutes in all)
done
if [ "$2" = final ]; then
    for r in $(run_names); do
        if [ ! -f /tmp/work/.sent-$r ] && [ -d /tmp/work/$r/last ]; then
            $HB export --model /tmp/work/$r/last --out /tmp/work/$r-partial --dtype bfloat16 && ship $r-partial /tmp/work/$r-partial
        fi
    done
fi
tar -czf $OUT/logs.tgz -C /tmp/work --exclude='*.tar' $(cd /tmp/work && ls -d *.log */metrics.jsonl */config.json val_prompts.jsonl *.meta.json 2>/dev/null)
tail -c 3000 /tmp/work/pipeline.log | tr '\r' '\n' | tail -25
for r in $(run_names); do echo "-- $r"; tail -c 1500 /tmp/work/$r.log 2>/dev/null | tr '\r' '\n' | tail -4; tail -2 /tmp/work/$r/metrics.jsonl 2>/dev/null; done
nvidia-smi --query-gpu=utilization.gpu,memory.used --format=csv
