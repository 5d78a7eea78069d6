"""What kind of position holds the fold's spike mass (tail.py's figure, shipped reader, as asked), over all answers:
the mass split by whether the base is sure there (its likeliest token >= 0.9), whether that token holds a digit, and
whether it occurs earlier in the answer, before the fold's window (so in the folded history: what the base copies
and the fold's reading cannot see). The window is the default fold's, max(60, 0.45 x the answer's tokens so far).

    python experiments/2026-11-28-tail-guard/kinds.py runs/tail-guard/segmented.jsonl > .../kinds.json
"""

from __future__ import annotations

import json
import sys
import tempfile
from collections import defaultdict
from pathlib import Path

import torch

import hamburger.core.model as core_model
from hamburger.bench.machine import machine_info
from hamburger.train.batching import collate
from hamburger.train.config import TrainConfig
from hamburger.train.trainer import Trainer

sys.path.insert(0, str(Path(__file__).resolve().parent))
from tail import GUARDS, READERS, SETTINGS, Capture, position_stats  # noqa: E402

WINDOW, SHARE = 60, 0.45  # the default fold's


def main() -> None:
    data = sys.argv[1]
    torch.set_num_threads(2)
    settings = json.loads(Path(SETTINGS).read_text())
    with tempfile.TemporaryDirectory() as out:
        cfg = TrainConfig.from_dict({**settings, "init": READERS["af-reader"], "out": out, "seed": 0, "data": data,
                                     "eval_data": data, "eval_max_rows": 0})
        trainer = Trainer(cfg)
    tok, k, layout = trainer.tokenizer, trainer.model.config.max_steps, trainer.layouts[0]
    has_digit = {}
    capture = Capture()
    core_model.kl_to_teacher = capture
    mass = defaultdict(lambda: [0.0, 0.0, 0])  # kind -> [spike mass, tail mass, positions]
    with torch.no_grad():
        trainer.objective.eval()
        for start in range(0, len(trainer.eval_rows), 8):
            batch = trainer.eval_rows[start:start + 8]
            capture.pairs.clear()
            trainer.objective(collate(batch, k, trainer.dist.device, *layout))
            (logits, teacher), = capture.pairs
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
            print(f"  {start + len(batch)}/{len(trainer.eval_rows)} answers", file=sys.stderr, flush=True)
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
