"""Training data: segmented (prompt, response, groups) rows and length-bucketed, shardable batches.

Rows come from `hamburger segment` (jsonl with ``prompt_ids``, ``response_ids``, ``groups`` and a
sidecar ``OUT.meta.json``). With ``recut`` settings every row is cut again from its stored ``entropies``
once per setting, and epoch e trains on cut ``e mod len(recut)``, bucketed by that cut's lengths. A
*step batch* is the set of rows of one optimizer step, the same for any number of processes; `shard`
cuts it into each process's micro-batches. Everything is deterministic given the seed, so a resumed
run sees exactly the batches (and groups) it would have seen.
"""

from __future__ import annotations

import math
import random
from dataclasses import dataclass
from typing import Callable, Sequence

from hamburger.core.packing import PackedBatch, TrainBatch, layout_slots, pack
from hamburger.data.dataset import load_dataset
from hamburger.data.segment import SegmentSettings, segment_entropies
from hamburger.errors import HamburgerError
from hamburger.eval.plausibility import repeated_ngram_rate


@dataclass
class Row:
    prompt_ids: list[int]
    response_ids: list[int]
    groups: list[int]
    recuts: tuple[list[int], ...] = ()  # group sizes under each `recut` setting (empty: the stored groups only)

    def slots(self, *layout) -> int:
        """Base positions of the merged sequence in ``layout`` (`layout_slots`' settings after the groups): the
        prompt, then the inputs of every group but the last."""
        return layout_slots(len(self.prompt_ids), self.groups, *layout)

    def at_epoch(self, epoch: int) -> "Row":
        """This row as epoch ``epoch`` trains on it: cut ``epoch mod len(recuts)``, or itself without recuts."""
        if not self.recuts:
            return self
        return Row(self.prompt_ids, self.response_ids, self.recuts[epoch % len(self.recuts)])


def to_batch(rows: list[Row]) -> TrainBatch:
    return TrainBatch([r.prompt_ids for r in rows], [r.response_ids for r in rows], [r.groups for r in rows])


def load_rows(path: str, tokenizer, max_steps: int, vocab_size: int,
              recut: Sequence[SegmentSettings] = ()) -> tuple[list[Row], dict]:
    """Read and check a segmented dataset (`load_dataset`); refuse one made for another tokenizer or larger groups.
    With ``recut``, every row also gets its groups under each setting, cut from its ``entropies`` (required)
    with H(p) over the vocabulary the entropies were measured on."""
    records, meta = load_dataset(path or "", tokenizer, max_steps, vocab_size)
    if not records:
        raise HamburgerError(f"dataset {path} has no rows")
    lacking = next((r["id"] for r in records if "entropies" not in r), None) if recut else None
    if lacking is not None:
        raise HamburgerError(f"recut needs entropies, but row {lacking!r} of {path} has none (re-make it with "
                             "`hamburger segment --data`)")
    vocab = meta.get("entropy_vocab_size") or vocab_size
    rows = [Row(r["prompt_ids"], r["response_ids"], r["groups"],
                tuple(segment_entropies(r["entropies"], s, vocab) for s in recut)) for r in records]
    return rows, meta


def unrepetitive(rows: list[Row], max_repeat: float) -> list[Row]:
    """The rows whose responses repeat themselves at most ``max_repeat``, in their order: the share of their 4-grams
    that occurred earlier in the response (`repeated_ngram_rate`, the quality measures' rep4, here over the stored
    response tokens, its end token included)."""
    return [r for r in rows if repeated_ngram_rate(r.response_ids) <= max_repeat]


def collate(rows: list[Row], max_steps: int, device=None, single_tail: int = 0, fold: int = 0, window: int = 0,
            share: float = 0.0, keep: str = "merged") -> PackedBatch:
    """The tensors of one (micro-)batch in a layout (`pack`'s settings), built once: what the model's training
    forward takes."""
    return pack(to_batch(rows), max_steps, device, single_tail, fold, window, share, keep)


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


def make_plan(lengths: list[int] | Callable[[int], list[int]], batch_size: int, max_tokens: int, bucket_size: int,
              seed: int, epochs: float, max_train_steps: int) -> Plan:
    """``lengths``: the rows' lengths, or a function epoch -> that epoch's lengths (rows re-cut per epoch).
    The number of steps is ``epochs`` times the first epoch's batch count (capped by ``max_train_steps``)."""
    lengths_at = lengths if callable(lengths) else (lambda epoch: lengths)
    first = epoch_batches(lengths_at(0), batch_size, max_tokens, bucket_size, seed, 0)
    total = max(1, math.ceil(epochs * len(first)))
    if max_train_steps:
        total = min(total, max_train_steps)
    steps, epoch, batches = [], 0, first
    while len(steps) < total:
        steps += [(epoch, i, b) for i, b in enumerate(batches)][:total - len(steps)]
        epoch += 1
        batches = epoch_batches(lengths_at(epoch), batch_size, max_tokens, bucket_size, seed, epoch)
    return Plan(steps, len(first))


def shard(rows: list[int], lengths: list[int] | dict[int, int], world: int, rank: int, grad_accum: int
          ) -> list[list[int]]:
    """This process's ``grad_accum`` micro-batches of a step batch (an empty one means "no rows").

    The step batch is sorted by length and cut into ``world * grad_accum`` contiguous parts of near
    equal size; process r gets parts r*grad_accum .. r*grad_accum + grad_accum - 1.
    """
    ordered = sorted(rows, key=lambda i: (lengths[i], i))
    parts = world * grad_accum
    bounds = [round(k * len(ordered) / parts) for k in range(parts + 1)]
    mine = range(rank * grad_accum, (rank + 1) * grad_accum)
    return [ordered[bounds[k]:bounds[k + 1]] for k in mine]


def padding_fraction(micro_batches: list[list[Row]], *layout) -> tuple[int, int]:
    """(real base positions, padded base positions) over micro-batches in ``layout`` (`Row.slots`), for the
    padding-waste metric."""
    real = sum(r.slots(*layout) for mb in micro_batches for r in mb)
    padded = sum(len(mb) * max(r.slots(*layout) for r in mb) for mb in micro_batches if mb)
    return real, padded
