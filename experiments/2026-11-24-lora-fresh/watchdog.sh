#!/usr/bin/env bash
# restart the larger training run (it checkpoints on SIGINT) when the two together pass 19 GiB RSS
cd /work/main
export MKL_CBWR=AVX2
while pgrep -f "hamburger train" >/dev/null; do
    total=$(ps -o rss= -C hamburger | awk '{s+=$1} END {print s+0}')
    if [ "$total" -gt 19900000 ]; then
        big=$(ps -o pid=,rss= -C hamburger | sort -k2 -n | tail -1 | awk '{print $1}')
        out=$(tr '\0' ' ' < /proc/$big/cmdline | grep -o "runs/cpu/lora-fresh[a-z-]*")
        echo "$(date -u +%T) total ${total}k: restarting $out (pid $big)"
        kill -INT $big; while kill -0 $big 2>/dev/null; do sleep 2; done
        grep -q '"kind": "end"' $out/metrics.jsonl || \
            nohup nice -n 2 .venv/bin/hamburger train --out $out --resume --set loss_chunk=512 >> $out.restarts.log 2>&1 &
        sleep 60
    fi
    sleep 15
done
