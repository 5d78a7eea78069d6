"""Training data: segmented (prompt, response, groups) rows and length-bucketed, shardable batches.

Rows come from `hamburger segment` (jsonl with ``prompt_ids``, ``response_ids``, ``groups`` and a
sidecar ``OUT.meta.json``). A *step batch* is the set of rows of one optimizer step, the same for
any number of processes; `shard` cuts it into each process's micro-batches. Everything is
deterministic given the seed, so a resumed run sees exactly the batches it would have seen.
"""

from __future__ import annotations

import json
import math
import random
from dataclasses import dataclass
from pathlib import Path

from hamburger.errors import HamburgerError
from hamburger.core.model import TrainBatch


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


def _read_jsonl(path: Path) -> tuple[list[dict], dict]:
    """Fallback reader when hamburger.data.segment is not available: rows and the sidecar meta (or {})."""
    rows = []
    with path.open(encoding="utf-8") as f:
        for n, line in enumerate(f, 1):
            if not line.strip():
                continue
            try:
                rows.append(json.loads(line))
            except json.JSONDecodeError as e:
                if not line.endswith("\n"):
                    break  # a truncated last line of a file still being written
                raise HamburgerError(f"{path}:{n}: not valid JSON: {e}") from e
    meta_file = Path(f"{path}.meta.json")
    meta = json.loads(meta_file.read_text()) if meta_file.is_file() else {}
    return rows, meta


def load_rows(path: str, tokenizer, max_steps: int, vocab_size: int) -> tuple[list[Row], dict]:
    """Read and check a segmented dataset; refuse one made for another tokenizer or larger groups."""
    p = Path(path)
    if not path or not p.is_file():
        raise HamburgerError(f"dataset {path!r} does not exist (make one with `hamburger segment`)")
    try:
        from hamburger.data.segment import check_dataset_compatible, load_dataset
    except ImportError:
        load_dataset = check_dataset_compatible = None
    if load_dataset is not None:
        records, meta = load_dataset(str(p))
        check_dataset_compatible(meta, tokenizer, max_steps)
    else:
        records, meta = _read_jsonl(p)
        _check_meta(p, meta, tokenizer, max_steps)
    rows = []
    for n, rec in enumerate(records, 1):
        try:
            row = Row([int(t) for t in rec["prompt_ids"]], [int(t) for t in rec["response_ids"]],
                      [int(g) for g in rec["groups"]])
        except (KeyError, TypeError, ValueError) as e:
            raise HamburgerError(f"{p}: row {n} lacks prompt_ids/response_ids/groups lists of ints ({e})") from e
        if not row.prompt_ids or not row.response_ids:
            raise HamburgerError(f"{p}: row {n} has an empty prompt or response")
        if sum(row.groups) != len(row.response_ids) or min(row.groups) < 1:
            raise HamburgerError(f"{p}: row {n}: groups {row.groups[:8]}... do not cut its response")
        if max(row.groups) > max_steps:
            raise HamburgerError(f"{p}: row {n} has a group of {max(row.groups)} tokens but the model's "
                                 f"max_steps is {max_steps}: segment the data again with --max-steps {max_steps}")
        top = max(max(row.prompt_ids), max(row.response_ids))
        if top >= vocab_size or min(min(row.prompt_ids), min(row.response_ids)) < 0:
            raise HamburgerError(f"{p}: row {n} has token id {top} outside the model's vocabulary ({vocab_size}): "
                                 "the dataset was made with another tokenizer")
        rows.append(row)
    if not rows:
        raise HamburgerError(f"dataset {p} has no rows")
    return rows, meta


def _check_meta(path: Path, meta: dict, tokenizer, max_steps: int) -> None:
    if meta.get("max_steps") is not None and int(meta["max_steps"]) > max_steps:
        raise HamburgerError(f"{path} was segmented with max_steps={meta['max_steps']}, the model has {max_steps}")
    vocab = meta.get("vocab_size") or meta.get("tokenizer_vocab_size")
    if vocab is not None and tokenizer is not None and int(vocab) != len(tokenizer):
        raise HamburgerError(f"{path} was made with a tokenizer of {vocab} tokens, this model's has {len(tokenizer)}")


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
