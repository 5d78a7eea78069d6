"""What kind of position holds the fold's spike mass (tail.py's figure, shipped reader, as asked), over all answers:
the mass split by whether the base is sure there (its likeliest token >= 0.9), whether that token holds a digit, and
whether it occurs earlier in the answer, before the fold's window (so in the folded history: what the base copies
and the fold's reading cannot see). The window is the default fold's, max(60, 0.45 x the answer's tokens so far).

    python experiments/2026-11-28-tail-guard/kinds.py runs/tail-guard/segmented.jsonl > .../kinds.json
"""

from __future__ import annotations

import json
import sys
from collections import defaultdict
from pathlib import Path

import torch

from hamburger.bench.machine import machine_info

sys.path.insert(0, str(Path(__file__).resolve().parent))
from tail import GUARDS, READERS, position_stats, reader_trainer, teacher_forced  # noqa: E402

WINDOW, SHARE = 60, 0.45  # the default fold's


def main() -> None:
    data = sys.argv[1]
    torch.set_num_threads(2)
    trainer = reader_trainer(data, READERS["af-reader"])
    tok = trainer.tokenizer
    has_digit = {}
    mass = defaultdict(lambda: [0.0, 0.0, 0])  # kind -> [spike mass, tail mass, positions]
    for batch, logits, teacher in teacher_forced(trainer):
        base_probs = teacher.softmax(-1)
        stats = position_stats(logits, teacher.log_softmax(-1), GUARDS["as asked"])
        sure, top = base_probs.max(-1)
        offset = 0
        for row in batch:
            ids = row.response_ids
            for i in range(len(ids)):
                t, token = offset + i, int(top[offset + i])
                if token not in has_digit:
                    has_digit[token] = any(c.isdigit() for c in tok.decode([token]))
                folded_before = i - max(WINDOW, int(SHARE * i))
                kind = (("sure" if sure[t] >= 0.9 else "unsure"), ("digit" if has_digit[token] else "word"),
                        ("in folded history" if token in ids[:max(0, folded_before)] else "not"))
                for key in (kind, ("all",)):
                    mass[key][0] += float(stats[t, 0])
                    mass[key][1] += float(stats[t, 1])
                    mass[key][2] += 1
            offset += len(ids)
    total = mass[("all",)]
    out = {"machine": machine_info(2, "float32"), "answers": len(trainer.eval_rows), "positions": total[2],
           "spike_mass": round(total[0], 3), "tail_mass": round(total[1], 3), "kinds": []}
    for key, (s, t, n) in sorted(mass.items(), key=lambda kv: -kv[1][0]):
        if key != ("all",):
            out["kinds"].append({"base": key[0], "token": key[1], "earlier": key[2], "positions": n,
                                 "spike_share": round(s / total[0], 4), "tail_share": round(t / total[1], 4)})
    print(json.dumps(out, indent=1))


if __name__ == "__main__":
    main()
