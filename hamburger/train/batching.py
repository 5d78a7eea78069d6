"""Training data: segmented (prompt, response, groups) rows and length-bucketed, shardable batches.

Rows come from `hamburger segment` (jsonl with ``prompt_ids``, ``response_ids``, ``groups`` and a
sidecar ``OUT.meta.json``). A *step batch* is the set of rows of one optimizer step, the same for
any number of processes; `shard` cuts it into each process's micro-batches. Everything is
deterministic given the seed, so a resumed run sees exactly the batches it would have seen.
"""

from __future__ import annotations

import math
import random
from dataclasses import dataclass

from hamburger.core.packing import PackedBatch, TrainBatch, pack
from hamburger.data.dataset import load_dataset
from hamburger.errors import HamburgerError


@dataclass
class Row:
    prompt_ids: list[int]
    response_ids: list[int]
    groups: list[int]

    @property
    def slots(self) -> int:
        """Base positions of the merged sequence: the prompt, then one per group but the last."""
        return len(self.prompt_ids) + len(self.groups) - 1


def to_batch(rows: list[Row]) -> TrainBatch:
    return TrainBatch([r.prompt_ids for r in rows], [r.response_ids for r in rows], [r.groups for r in rows])


def load_rows(path: str, tokenizer, max_steps: int, vocab_size: int) -> tuple[list[Row], dict]:
    """Read and check a segmented dataset (`load_dataset`); refuse one made for another tokenizer or larger groups."""
    records, meta = load_dataset(path or "", tokenizer, max_steps, vocab_size)
    rows = [Row(r["prompt_ids"], r["response_ids"], r["groups"]) for r in records]
    if not rows:
        raise HamburgerError(f"dataset {path} has no rows")
    return rows, meta


def collate(rows: list[Row], max_steps: int, device=None) -> PackedBatch:
    """The tensors of one (micro-)batch, built once: what the model's training forward takes."""
    return pack(to_batch(rows), max_steps, device)


# ------------------------------------------------------------------------------------------ batching
def epoch_batches(lengths: list[int], batch_size: int, max_tokens: int, bucket_size: int, seed: int,
                  epoch: int) -> list[list[int]]:
    """Step batches (row indices) of one epoch: shuffle, sort windows of ``bucket_size`` batches by
    length, cut them into batches of ``batch_size`` rows or ``max_tokens`` padded positions, shuffle."""
    rng = random.Random(f"{seed}/{epoch}")
    order = list(range(len(lengths)))
    rng.shuffle(order)
    per_batch = batch_size or max(1, max_tokens // max(1, max(lengths)))
    window = per_batch * bucket_size
    batches: list[list[int]] = []
    for w in range(0, len(order), window):
        chunk = sorted(order[w:w + window], key=lambda i: (lengths[i], i))
        current: list[int] = []
        for i in chunk:
            full = (batch_size and len(current) >= batch_size) or (  # the window is sorted: i is the longest
                max_tokens and current and lengths[i] * (len(current) + 1) > max_tokens)
            if full:
                batches.append(current)
                current = []
            current.append(i)
        if current:
            batches.append(current)
    rng.shuffle(batches)
    return batches


@dataclass
class Plan:
    """The whole run's step batches: ``steps[s] = (epoch, index in epoch, row indices)``."""

    steps: list[tuple[int, int, list[int]]]
    batches_per_epoch: int


def make_plan(lengths: list[int], batch_size: int, max_tokens: int, bucket_size: int, seed: int, epochs: float,
              max_train_steps: int) -> Plan:
    first = epoch_batches(lengths, batch_size, max_tokens, bucket_size, seed, 0)
    total = max(1, math.ceil(epochs * len(first)))
    if max_train_steps:
        total = min(total, max_train_steps)
    steps, epoch, batches = [], 0, first
    while len(steps) < total:
        steps += [(epoch, i, b) for i, b in enumerate(batches)][:total - len(steps)]
        epoch += 1
        batches = epoch_batches(lengths, batch_size, max_tokens, bucket_size, seed, epoch)
    return Plan(steps, len(first))


def shard(rows: list[int], lengths: list[int], world: int, rank: int, grad_accum: int) -> list[list[int]]:
    """This process's ``grad_accum`` micro-batches of a step batch (an empty one means "no rows").

    The step batch is sorted by length and cut into ``world * grad_accum`` contiguous parts of near
    equal size; process r gets parts r*grad_accum .. r*grad_accum + grad_accum - 1.
    """
    ordered = sorted(rows, key=lambda i: (lengths[i], i))
    parts = world * grad_accum
    bounds = [round(k * len(ordered) / parts) for k in range(parts + 1)]
    mine = range(rank * grad_accum, (rank + 1) * grad_accum)
    return [ordered[bounds[k]:bounds[k + 1]] for k in mine]


def padding_fraction(micro_batches: list[list[Row]]) -> tuple[int, int]:
    """(real base positions, padded base positions) over micro-batches, for the padding-waste metric."""
    real = sum(r.slots for mb in micro_batches for r in mb)
    padded = sum(len(mb) * max(r.slots for r in mb) for mb in micro_batches if mb)
    return real, padded
