"""Where the fold's spike mass sits (tail.py's figure, shipped reader, as asked): every position of the first ROWS
answers whose spike mass is above 0.02, with the answer's text before it, the fold's likeliest token and its
probability, the base's likeliest and its probability, and the base's NLL of the fold's likeliest. ROWS: a count
(the first ones) or a comma-separated list of answer indices (the file's order).

    python experiments/2026-11-28-tail-guard/where.py runs/tail-guard/segmented.jsonl [ROWS] > .../where.txt
"""

from __future__ import annotations

import sys
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))
from tail import GUARDS, READERS, position_stats, reader_trainer, teacher_forced  # noqa: E402


def main() -> None:
    data, rows = sys.argv[1], sys.argv[2] if len(sys.argv) > 2 else "40"
    wanted = [int(i) for i in rows.split(",")] if "," in rows else list(range(int(rows)))
    torch.set_num_threads(2)
    trainer = reader_trainer(data, READERS["af-reader"], max(wanted) + 1)
    trainer.eval_rows = [trainer.eval_rows[i] for i in wanted]
    tok, start = trainer.tokenizer, 0
    print("| answer | position | text before | fold's top (p) | base's top (p) | base NLL of fold's top | spike mass |")
    print("|---|---|---|---|---|---|---|")
    for batch, logits, teacher in teacher_forced(trainer):
        base_logprobs = teacher.log_softmax(-1)
        spikes = position_stats(logits, base_logprobs, GUARDS["as asked"])[:, 0]
        offset = 0
        for n, row in enumerate(batch):
            ids = row.response_ids
            for i in range(len(ids)):
                t = offset + i
                if spikes[t] > 0.02:
                    q = logits[t].softmax(-1)
                    top, base_top = int(q.argmax()), int(base_logprobs[t].argmax())
                    before = tok.decode(ids[max(0, i - 30):i]).replace("\n", "\\n").replace("|", "/")
                    print(f"| {wanted[start + n]} | {i} | {before} | {tok.decode([top])!r} ({q[top]:.2f}) | "
                          f"{tok.decode([base_top])!r} ({base_logprobs[t, base_top].exp():.2f}) | "
                          f"{-base_logprobs[t, top]:.1f} | {spikes[t]:.2f} |", flush=True)
            offset += len(ids)
        start += len(batch)


if __name__ == "__main__":
    main()
