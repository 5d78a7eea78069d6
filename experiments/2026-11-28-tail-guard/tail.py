"""Teacher-forced tail mass: how often a sampled token of verify_fold would be one the unchanged base finds unlikely.

Every reader decode test costs 25 minutes (three draws x 120 prompts), and held-out KL ranks readers opposite to it
(../2026-11-28-sampled-reader/). This scores, on the base's own sampled answers to dev GSM8K rows 0-119 (rows.py,
cut by `hamburger segment`), each position of each answer in the default fold's layout (teacher-forced): the
distribution a sampled row draws from there (T 0.7, top-p 0.9, as the draws were made) under the fold's reading,
and the same under the base's full-cache reading. Per position, of each: the *spike mass* (the probability that the
drawn token is one the base gives more than 6 nats, the decodes' spike threshold), the *tail mass* (above 4 nats),
the expected NLL of the drawn token under the base, and the entropy. Per answer the masses add up to an expected
count. Readers: the base's own reading of the fold (adapters off), the shipped reader (af-reader), and session 44-45's
sr, fkl and rkl; for the shipped reader also sampling *guards* on folded positions (a lower temperature, a tighter
top-p, a min-p floor relative to the likeliest token), each beside the same guard applied to the base's own reading.

    E=experiments/2026-11-28-tail-guard  # (from the checkout root: the readers' paths are relative to it)
    python $E/rows.py runs/tail-guard/base-sampled.jsonl
    hamburger segment --data runs/tail-guard/base-sampled.jsonl --strategy sliding --sliding-p 0.9 \
        --out runs/tail-guard/segmented.jsonl --threads 2
    python $E/tail.py runs/tail-guard/segmented.jsonl "base reading" af-reader sr > $E/tail.jsonl

The readers to score are named after the data (default: all of READERS). The first output line records the machine.
"""

from __future__ import annotations

import contextlib
import json
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

import torch

import hamburger.core.model as core_model
from hamburger.bench.machine import machine_info
from hamburger.core.lora import adapters_disabled
from hamburger.train.batching import collate
from hamburger.train.config import TrainConfig
from hamburger.train.trainer import Trainer

SETTINGS = "experiments/2026-11-28-sampled-reader/train/config.json"  # the readers' fold layout and LoRA settings
READERS = {"base reading": "runs/keep-fold/warm-after-export", "af-reader": "runs/keep-fold/warm-after-export",
           "sr": "runs/sampled-reader/export", "fkl": "runs/sampled-reader/export-fkl",
           "rkl": "runs/sampled-reader/export-rkl"}
SPIKE, TAIL = 6.0, 4.0  # nats under the base
TOP = 1024  # the support is looked for among this many likeliest tokens (checked: their mass reaches top-p)


@dataclass(frozen=True)
class Guard:
    """A sampled row's draw: temperature, top-p, and a min-p floor (tokens under ``min_p`` x the likeliest's
    probability, after temperature, are dropped; 0: none)."""

    temperature: float = 0.7
    top_p: float = 0.9
    min_p: float = 0.0


GUARDS = {"as asked": Guard(), "T 0.6": Guard(temperature=0.6), "T 0.5": Guard(temperature=0.5),
          "top-p 0.8": Guard(top_p=0.8), "top-p 0.7": Guard(top_p=0.7), "min-p 0.05": Guard(min_p=0.05),
          "min-p 0.1": Guard(min_p=0.1), "min-p 0.2": Guard(min_p=0.2)}


def draw(logits: torch.Tensor, guard: Guard) -> tuple[torch.Tensor, torch.Tensor]:
    """The distribution ``guard`` draws from at each row of ``logits`` [T, V], over the row's TOP likeliest tokens:
    (probabilities [T, TOP], token ids [T, TOP])."""
    z = logits.float() / guard.temperature
    values, index = z.topk(TOP, -1)
    probs = (values - z.logsumexp(-1, keepdim=True)).exp()
    cumulative = probs.double().cumsum(-1)
    if (cumulative[:, -1] < guard.top_p).any():
        raise RuntimeError(f"the top {TOP} tokens hold less than top-p somewhere: raise TOP")
    keep = (cumulative - probs.double()) < guard.top_p
    if guard.min_p > 0:
        keep &= probs >= guard.min_p * probs[:, :1]
    q = torch.where(keep, probs, 0.0)
    return q / q.sum(-1, keepdim=True), index


def draw_stats(q: torch.Tensor, nll: torch.Tensor) -> torch.Tensor:
    """[..., 4]: spike mass, tail mass, expected base NLL and entropy of draws ``q`` [..., K] whose tokens the base
    gives ``nll`` [..., K]."""
    entropy = -(q * torch.where(q > 0, q.log(), 0.0)).sum(-1)
    return torch.stack([(q * (nll > SPIKE)).sum(-1), (q * (nll > TAIL)).sum(-1), (q * nll).sum(-1), entropy], -1)


def position_stats(logits: torch.Tensor, base_logprobs: torch.Tensor, guard: Guard) -> torch.Tensor:
    """[T, 4]: `draw_stats` of the draw ``guard`` makes from ``logits`` [T, V], the NLL under ``base_logprobs``."""
    q, index = draw(logits, guard)
    return draw_stats(q, -base_logprobs.gather(-1, index))


class Capture:
    """The (model, teacher) logits of the last KL term the training forward computed."""

    def __init__(self):
        self.pairs: list[tuple[torch.Tensor, torch.Tensor]] = []
        self.original = core_model.kl_to_teacher

    def __call__(self, logits, teacher_logits, mix=0.0):
        self.pairs.append((logits.detach(), teacher_logits.detach()))
        return self.original(logits, teacher_logits, mix)


def reader_trainer(data: str, path: str, rows: int = 0) -> Trainer:
    """A trainer with the reader at ``path`` in the readers' fold layout (SETTINGS), its held-out rows the first
    ``rows`` of ``data`` (0: all)."""
    settings = json.loads(Path(SETTINGS).read_text())
    with tempfile.TemporaryDirectory() as out:
        return Trainer(TrainConfig.from_dict({**settings, "init": path, "out": out, "seed": 0, "data": data,
                                              "eval_data": data, "eval_max_rows": rows}))


def teacher_forced(trainer: Trainer, label: str = ""):
    """For each batch of 8 of the trainer's held-out rows: (the rows, the fold reading's logits [T, V], the unchanged
    base's logits [T, V]), T the rows' response tokens in order (the verify-fold layout's one-token groups)."""
    k, layout, rows = trainer.model.config.max_steps, trainer.layouts[0], trainer.eval_rows
    capture = Capture()
    core_model.kl_to_teacher = capture
    try:
        with torch.no_grad():
            trainer.objective.eval()
            for start in range(0, len(rows), 8):
                batch = rows[start:start + 8]
                capture.pairs.clear()
                trainer.objective(collate(batch, k, trainer.dist.device, *layout))
                (logits, teacher), = capture.pairs
                if logits.shape[0] != sum(len(r.response_ids) for r in batch):
                    raise RuntimeError(f"{logits.shape[0]} positions for {sum(len(r.response_ids) for r in batch)} "
                                       f"response tokens")
                yield batch, logits, teacher
                print(f"  {label}{start + len(batch)}/{len(rows)} answers", file=sys.stderr, flush=True)
    finally:
        core_model.kl_to_teacher = capture.original


def score(trainer: Trainer, guards: dict[str, Guard], base_side: bool, reading: str) -> list[dict]:
    """Per guard (and per side: the fold's reading, and with ``base_side`` the base's), the per-answer sums."""
    sides = ["fold"] + (["base"] if base_side else [])
    sums = {(g, s): [] for g in guards for s in sides}
    changed, total = 0, 0
    off = adapters_disabled(trainer.model.base) if reading == "base reading" else contextlib.nullcontext()
    with off:
        for batch, logits, teacher in teacher_forced(trainer, f"{reading}: "):
            lengths = [len(r.response_ids) for r in batch]
            base_logprobs = teacher.log_softmax(-1)
            changed += int(((logits - teacher).abs().amax(-1) > 1e-3).sum())
            total += logits.shape[0]
            for g, guard in guards.items():
                for side in sides:
                    stats = position_stats(logits if side == "fold" else teacher, base_logprobs, guard)
                    for part in stats.split(lengths):
                        spikes = part[:, 0]
                        sums[(g, side)].append([float(spikes.sum()), float(1 - (1 - spikes).prod()),
                                                float(part[:, 1].sum()), float(part[:, 2].sum()),
                                                float(part[:, 3].sum()), part.shape[0]])
    out = []
    for (g, side), per in sums.items():
        t = torch.tensor(per, dtype=torch.float64)
        n = float(t[:, 5].sum())
        out.append({"reader": reading, "guard": g, "side": side, **guards[g].__dict__, "answers": len(per),
                    "tokens": int(n), "changed_share": round(changed / total, 4),
                    "spikes_per_answer": round(float(t[:, 0].mean()), 5),
                    "p_any_spike": round(float(t[:, 1].mean()), 5),
                    "tail_per_answer": round(float(t[:, 2].mean()), 4),
                    "expected_nll_per_token": round(float(t[:, 3].sum()) / n, 5),
                    "entropy_per_token": round(float(t[:, 4].sum()) / n, 5),
                    "per_answer_spikes": [round(float(x), 5) for x in t[:, 0]],
                    "per_answer_tail": [round(float(x), 4) for x in t[:, 2]],
                    "per_answer_nll": [round(float(x / m), 4) for x, m in zip(t[:, 3], t[:, 5])]})
    return out


def main() -> None:
    data, names = sys.argv[1], sys.argv[2:] or list(READERS)
    torch.set_num_threads(2)
    print(json.dumps({"machine": machine_info(2, "float32"), "data": data, "readers": names}), flush=True)
    for reading in names:
        path = READERS[reading]
        if not (Path(path) / "hamburger_config.json").exists():
            print(f"(skipped {reading}: {path} missing)", file=sys.stderr)
            continue
        guards = GUARDS if reading == "af-reader" else {"as asked": GUARDS["as asked"]}
        for row in score(reader_trainer(data, path), guards, base_side=reading == "af-reader", reading=reading):
            print(json.dumps(row), flush=True)


if __name__ == "__main__":
    main()
