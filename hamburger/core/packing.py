"""Token groups -> the merged layout, shared by training, the MSD stage and the macro step.

A response cut into groups is fed to the base as its prompt tokens, then one merged input per group but
the last (the last group is predicted, never fed); with ``single_tail`` t, a group's last t tokens go in as their
own one-token inputs after one merged input of the rest (`input_sizes`), and with ``fold`` d (the engine's
``fold_tail``) such a split group comes back as one merged input of all its tokens d groups later, which every slot
after it reads instead of the split ones (`masks.slot_mask`'s ``lifetime``). With ``window`` W (verify mode's
folding, `engine/folding.py`) every response token is its own one-token input and the base predicts every token;
a group of 2+ tokens folds before the token W after its last one (or, with ``share``, that share of the tokens fed
when more): by default (keep ``merged``) it comes back there as one merged input, which later inputs read instead of
its single ones; with keep ``first``, ``last`` or ``none`` nothing is fed and later inputs stop seeing the group's
tokens but that one (`leaving`). `pack` builds every index and tensor
of that layout for a whole batch once, on the batching side, so that the model's training forward only runs tensor
ops; it also holds the ordinary, unmerged [prompt, response] layout that the KL teacher and stage msd read.
"""

from __future__ import annotations

from dataclasses import dataclass
from itertools import accumulate

import torch

from hamburger.core.masks import FOREVER


@dataclass
class TrainBatch:
    """Token ids of (prompt, response) pairs and each response's group sizes (summing to its length)."""

    prompt_ids: list[list[int]]
    response_ids: list[list[int]]
    groups: list[list[int]]

    def __post_init__(self):
        for p, r, g in zip(self.prompt_ids, self.response_ids, self.groups, strict=True):
            if not p or not r:
                raise ValueError("every row needs a non-empty prompt and response")
            if sum(g) != len(r) or min(g) < 1:
                raise ValueError(f"group sizes {g} do not cut a response of {len(r)} tokens")


def group_starts(groups: list[int]) -> list[int]:
    """Index of each group's first token in its response."""
    return [end - n for end, n in zip(accumulate(groups), groups)]


def input_sizes(size: int, single_tail: int = 0) -> list[int]:
    """The inputs (slots) a fed group of ``size`` tokens takes, in order, as token counts: one merged input of all
    but its last ``single_tail`` tokens (when any are left), then each of those tokens alone. ``single_tail`` 0 is
    the paper's layout, one slot per group: [size]; 1 feeds the last token alone: [size - 1, 1] ([1, 1] for 2)."""
    head = size - single_tail
    return ([head] if head > 0 else []) + [1] * min(size, single_tail)


KEEPS = ("merged", "last", "first", "none")  # what a folded group leaves (`engine.folding`'s keep)


def leaving(start: int, end: int, keep: str) -> range:
    """The tokens of a folded group [start, end) that leave their one-token slots, by what it ``keep``s (`KEEPS`;
    ``merged``: all of them, for its merged slot)."""
    if keep in ("none", "merged"):
        return range(start, end)
    return range(start + (keep == "first"), end - (keep == "last"))


def layout_slots(prompt_length: int, groups: list[int], single_tail: int = 0, fold: int = 0, window: int = 0,
                 share: float = 0.0, keep: str = "merged") -> int:
    """Base slots of a row's merged layout: its prompt, then the inputs of every group but the last (with ``fold`` d,
    and a folded input for each split group with d fed groups after it; with ``window``, every response token but the
    last and, keeping ``merged``, a merged input for each group that `window_folds` folds)."""
    if window:
        merged = sum(map(len, window_folds(groups, window, share).values())) if keep == "merged" else 0
        return prompt_length + sum(groups) - 1 + merged
    split = [len(input_sizes(n, single_tail)) for n in groups[:-1]]
    return prompt_length + sum(split) + (sum(k > 1 for k in split[:len(split) - fold]) if fold else 0)


def window_folds(groups: list[int], window: int, share: float = 0.0) -> dict[int, list[tuple[int, int]]]:
    """Verify mode's folding of a response cut into ``groups``: response token i -> the groups [start, end) of 2+
    tokens that fold just before token i's one-token input is fed: the first i with end <= i - max(window, int(share *
    i)), i.e. ``window`` tokens after the group's end, or ``share`` of the i tokens fed when more
    (`Folding.window_at`); only tokens but the last are fed."""
    fed, out = sum(groups) - 1, {}
    for start, n in zip(group_starts(groups), groups):
        at = start + n + window
        while start + n > at - int(share * at):
            at += 1
        if n > 1 and at < fed:
            out.setdefault(at, []).append((start, start + n))
    return out


def group_windows(batch: "TrainBatch", max_steps: int, device=None
                  ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Every group of every row (in `PackedBatch.group_tokens` order) widened to the next ``max_steps`` response
    tokens, across the group's end (fewer at the response's end): (tokens [G, max_steps] padded with 0, sizes [G],
    the response token (index over the batch's response tokens, rows in order) of every window token [sum sizes])."""
    tokens, sizes, where, offset = [], [], [], 0
    for response, groups in zip(batch.response_ids, batch.groups):
        for start in group_starts(groups):
            end = min(len(response), start + max_steps)
            tokens.append(pad_group(response[start:end], max_steps))
            sizes.append(end - start)
            where += range(offset + start, offset + end)
        offset += len(response)
    return (torch.tensor(tokens, dtype=torch.long, device=device).view(len(sizes), max_steps),
            torch.tensor(sizes, dtype=torch.long, device=device), torch.tensor(where, dtype=torch.long, device=device))


def pad_group(tokens: list[int], width: int) -> list[int]:
    """One group's tokens right-padded with 0 to ``width`` (max_steps): the embedder's and MSD's input row."""
    return tokens + [0] * (width - len(tokens))


def group_tensors(groups: list[list[int]], width: int, device=None) -> tuple[torch.Tensor, torch.Tensor]:
    """(tokens [G, width] padded with 0, sizes [G]) of a list of token groups."""
    tokens = torch.tensor([pad_group(g, width) for g in groups], dtype=torch.long, device=device)
    return tokens.view(len(groups), width), torch.tensor([len(g) for g in groups], dtype=torch.long, device=device)


@dataclass
class PackedBatch:
    """A `TrainBatch` as tensors, groups of at most ``max_steps`` tokens; ``(rows, cols)`` pairs index [B, S] inputs.

    Merged layout (the training forward): per row, the prompt tokens, then the inputs of every group but the last
    (`input_sizes`: one merged input per group, or with a single tail that and the tail's tokens alone), each at the
    position of its last token. Unmerged layout (teacher, stage msd): the plain
    [prompt, response] sequences, right-padded. The tails index each layout's slots after the prompts, for the
    forwards that reuse the prompts' states (`HamburgerModel.prompt_states`).
    """

    batch: TrainBatch  # the lists it was made from
    group_tokens: torch.Tensor  # [G, max_steps] every group of every row, in order, padded with 0
    group_sizes: torch.Tensor  # [G]
    prompt_at: tuple[torch.Tensor, torch.Tensor]  # where each prompt token goes
    prompt_tokens: torch.Tensor  # [P]
    merged_at: tuple[torch.Tensor, torch.Tensor]  # where each input after the prompts goes
    input_tokens: torch.Tensor  # [M, max_steps] the tokens each of those inputs merges (one or more), padded with 0
    input_sizes: torch.Tensor  # [M]
    positions: torch.Tensor  # [B, S] rotary positions
    valid: torch.Tensor  # [B, S]
    before_group: tuple[torch.Tensor, torch.Tensor]  # the slot before each group: its features predict it
    ids: torch.Tensor  # [B, L] unmerged token ids, padded with 0
    ids_valid: torch.Tensor  # [B, L]
    response_at: tuple[torch.Tensor, torch.Tensor]  # unmerged positions predicting each response token
    prompt_lengths: torch.Tensor  # [B]
    merged_tail: tuple[torch.Tensor, torch.Tensor]  # merged-layout slots after each prompt (`tail_index`)
    unmerged_tail: tuple[torch.Tensor, torch.Tensor]  # unmerged positions after each prompt but the last token
    lifetime: torch.Tensor | None = None  # [B, S] with fold: slots each slot stays seen for (`masks.slot_mask`)
    first_fold: torch.Tensor | None = None  # [B, S] with window: each row's first input fed after a fold, if any


def tail_index(starts: list[int], counts: list[int], device=None) -> tuple[torch.Tensor, torch.Tensor]:
    """Columns ``starts[b] .. starts[b] + counts[b] - 1`` of each row b as (cols [B, R], valid [B, R]), R the largest
    count: the slots after each row's prompt, which a forward that reuses the prompt's states runs alone. A padding
    entry points at column 0 and is never read."""
    width = max(counts, default=0)
    cols = [[s + j if j < n else 0 for j in range(width)] for s, n in zip(starts, counts)]
    valid = [[j < n for j in range(width)] for n in counts]
    return (torch.tensor(cols, dtype=torch.long, device=device).view(len(counts), width),
            torch.tensor(valid, dtype=torch.bool, device=device).view(len(counts), width))


def pack(batch: TrainBatch, max_steps: int, device=None, single_tail: int = 0, fold: int = 0,
         window: int = 0, share: float = 0.0, keep: str = "merged") -> PackedBatch:
    """The merged and unmerged layouts of ``batch`` (see `PackedBatch`); groups longer than max_steps are an error.
    ``fold`` d: as the engine's ``fold_tail`` feeds it, a group split into 2+ inputs comes back d groups later as one
    input of all its tokens (at its last token's position, before that later group's inputs), and from there on only
    that one is seen. A group with fewer than d fed groups after it is never folded (nothing after it would read it).
    ``window`` W: verify mode's folded layout (`window_folds`); the packed batch's groups are then every token alone
    (the base predicts each), and ``batch.groups`` only say what folds (``share`` and ``keep``: `window_folds`,
    `leaving`; a group that keeps a token's slot may be longer than max_steps: no embedder merges it), and
    ``first_fold`` marks each row's first input fed after a fold, where ``lora_scope: after_fold``'s adapters start."""
    fold_groups = batch.groups
    if window:  # every token alone, predicted by the base
        batch = TrainBatch(batch.prompt_ids, batch.response_ids, [[1] * len(r) for r in batch.response_ids])
    tokens, inputs, prompt_r, prompt_c, prompt_tok, merge_r, merge_c = [], [], [], [], [], [], []
    feat_r, feat_c, positions, counts, lifetimes, first_fold = [], [], [], [], [], set()
    for b, (p, r, g) in enumerate(zip(batch.prompt_ids, batch.response_ids, batch.groups)):
        if max(fold_groups[b]) > max_steps and keep == "merged":
            raise ValueError(f"a group of {max(fold_groups[b])} tokens exceeds max_steps={max_steps}")
        length = len(p)
        place = list(range(length))  # rotary position of each slot
        life = [FOREVER] * length
        starts, split_at = group_starts(g), {}  # (the columns of the split groups not folded yet)
        folds, single_at = window_folds(fold_groups[b], window, share) if window else {}, {}  # (token -> column)
        fold_from = min(folds, default=None)  # (the token whose inputs come first after the row's first fold)
        feat_c.append(length - 1)
        for j, (start, n) in enumerate(zip(starts, g)):
            tokens.append(r[start:start + n])
            if j == len(g) - 1:  # the last group is predicted, never fed
                break
            fed = [(starts[j - fold], g[j - fold])] if j - fold in split_at else []  # a fold comes first
            for c in split_at.pop(j - fold, []):
                life[c] = len(place) - c  # seen until the fold's slot
            first = len(place) + len(fed)  # (window: token `start`'s input comes after these merged ones, and no
            for s, e in folds.get(start, []):  # merged one sees the single inputs any of them replaces)
                for i in leaving(s, e, keep):
                    life[single_at[i]] = first - single_at[i]
                if keep == "merged":
                    fed.append((s, e - s))
            sizes = input_sizes(n, single_tail)
            fed += [(start + sum(sizes[:i]), size) for i, size in enumerate(sizes)]
            if fold and len(sizes) > 1:
                split_at[j] = list(range(len(place) + len(fed) - len(sizes), len(place) + len(fed)))
            if start == fold_from:
                first_fold.add((b, len(place)))
            for s, size in fed:
                merge_c.append(len(place))
                inputs.append(r[s:s + size])
                place.append(length + s + size - 1)  # an input sits at its last token
                life.append(FOREVER)
            single_at[start] = len(place) - 1
            feat_c.append(len(place) - 1)  # the group's last input predicts the next group
        merge_r += [b] * (len(place) - length)
        prompt_r += [b] * length
        prompt_c += list(range(length))
        prompt_tok += p
        positions.append(place)
        lifetimes.append(life)
        counts.append(len(place) - length)
        feat_r += [b] * len(g)
    slots = max(map(len, positions))
    valid = [[True] * len(x) + [False] * (slots - len(x)) for x in positions]
    positions = [x + [0] * (slots - len(x)) for x in positions]
    group_tokens, group_sizes = group_tensors(tokens, max_steps, device)
    input_tokens, input_sizes_ = group_tensors(inputs, max_steps, device)
    seqs = [p + r for p, r in zip(batch.prompt_ids, batch.response_ids)]
    width = max(map(len, seqs))
    answer_r = [b for b, r in enumerate(batch.response_ids) for _ in r]
    answer_c = [len(p) - 1 + i for p, r in zip(batch.prompt_ids, batch.response_ids) for i in range(len(r))]

    def at(rows, cols):
        return torch.tensor(rows, dtype=torch.long, device=device), torch.tensor(cols, dtype=torch.long, device=device)

    return PackedBatch(
        batch, group_tokens, group_sizes, at(prompt_r, prompt_c), torch.tensor(prompt_tok, device=device),
        at(merge_r, merge_c), input_tokens, input_sizes_,
        torch.tensor(positions, dtype=torch.long, device=device), torch.tensor(valid, device=device),
        at(feat_r, feat_c), torch.tensor([s + [0] * (width - len(s)) for s in seqs], device=device),
        torch.tensor([[True] * len(s) + [False] * (width - len(s)) for s in seqs], device=device),
        at(answer_r, answer_c), torch.tensor([len(p) for p in batch.prompt_ids], device=device),
        tail_index([len(p) for p in batch.prompt_ids], counts, device),
        tail_index([len(p) for p in batch.prompt_ids], [len(r) - 1 for r in batch.response_ids], device),
        torch.tensor([x + [FOREVER] * (slots - len(x)) for x in lifetimes], dtype=torch.long, device=device)
        if fold or window else None,
        torch.tensor([[(b, c) in first_fold for c in range(slots)] for b in range(len(positions))], device=device)
        if window else None)


def as_packed(batch: TrainBatch | PackedBatch, max_steps: int, device=None, single_tail: int = 0,
              fold: int = 0, window: int = 0, share: float = 0.0, keep: str = "merged") -> PackedBatch:
    """``batch`` itself when already packed, else `pack` of it (a convenience for callers with lists)."""
    if isinstance(batch, PackedBatch):
        return batch
    return pack(batch, max_steps, device, single_tail, fold, window, share, keep)
