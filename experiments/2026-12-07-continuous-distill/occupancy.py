"""How full a draw's batches are: the rows a forward decodes, from a committed draw's answer lengths, under the
fixed batches `distill` ran up to session 85 (batches of BATCH in file order, 32-token chunks, rows that ended leaving
between chunks) and under continuous batching (`data/answers.py`: refills every REFILL forwards). Counts forwards
and row-forwards only (a prompt's reading is one more forward for its batch in both), no timing.

    python experiments/2026-12-07-continuous-distill/occupancy.py \
        data/distilled/smollm2-135m-instruct.train-s4.jsonl.gz > experiments/2026-12-07-continuous-distill/occupancy.txt
"""

from __future__ import annotations

import argparse
import gzip
import json


def lengths(path: str) -> list[int]:
    """Forwards each answer needed: its tokens, and one more for the EOS that ended it."""
    opener = gzip.open if path.endswith(".gz") else open
    with opener(path, "rt") as f:
        rows = [json.loads(line) for line in f]
    return [len(r["response_token_ids"]) + (r["finish_reason"] == "eos") for r in rows]


def fixed(lens: list[int], batch: int, chunk: int, cap: int) -> tuple[int, int]:
    """(forwards, row-forwards) of batches of ``batch`` in order, rows leaving at chunk ends."""
    forwards = row_forwards = 0
    for start in range(0, len(lens), batch):
        part, produced = lens[start:start + batch], 0
        active = len(part)
        while active and produced < cap:
            forwards += chunk
            row_forwards += chunk * active
            produced += chunk
            active = sum(n > produced for n in part)
    return forwards, row_forwards


def continuous(lens: list[int], batch: int, refill: int) -> tuple[int, int]:
    """(forwards, row-forwards) of one batch that takes the next answers in order as rows leave, every ``refill``."""
    waiting, running, forwards, row_forwards = list(reversed(lens)), [], 0, 0
    while waiting or running:
        while len(running) < batch and waiting:
            running.append(waiting.pop())
        for _ in range(refill):
            if all(n <= 0 for n in running):
                break
            forwards += 1
            row_forwards += len(running)
            running = [n - 1 for n in running]
        running = [n for n in running if n > 0]
    return forwards, row_forwards


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("draw", help="a draw's jsonl (or .jsonl.gz) of answers")
    parser.add_argument("--batch", type=int, default=32, help="rows a batch holds")
    parser.add_argument("--chunk", type=int, default=32, help="the fixed batches' tokens between departures")
    parser.add_argument("--cap", type=int, default=256, help="the draw's --max-new-tokens")
    parser.add_argument("--refills", default="1,8,32", help="comma-separated refill intervals (forwards)")
    args = parser.parse_args()
    lens = lengths(args.draw)
    useful = sum(lens)
    print(f"{args.draw}: {len(lens)} answers, {useful} token forwards needed, mean {useful / len(lens):.1f}, "
          f"{sum(n >= args.cap for n in lens) / len(lens):.1%} at the cap of {args.cap}")
    runs = [(f"fixed batches of {args.batch}, {args.chunk}-token chunks", fixed(lens, args.batch, args.chunk,
                                                                                 args.cap))]
    runs += [(f"continuous, refill every {r}", continuous(lens, args.batch, r)) for r in map(int,
                                                                                      args.refills.split(","))]
    for name, (forwards, row_forwards) in runs:
        print(f"{name}: {forwards} forwards, {row_forwards / forwards:.1f} rows a forward, "
              f"{useful / row_forwards:.1%} of row-forwards useful")


if __name__ == "__main__":
    main()
