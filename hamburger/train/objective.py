"""Pieces of the trainer that do not depend on its loop: processes, schedule, metrics, the MSD stage.

* `lr_at`: linear warm-up then cosine decay to a floor.
* `batch_stats` / `summarize`: sums of losses and accuracies that add up across micro-batches and
  processes, and the metrics they give (token accuracy per micro position: 0 = the skip path; also on *fresh*
  tokens alone, those that repeat no earlier 4-gram of their answer, where a caller says which they are).
* `Objective`: what the wrapped network computes: the KL teacher (if any), then the stage's forward.
* `msd_forward`: the cheap first stage: the micro-step decoder and stop head trained on features of
  the ordinary (unmerged) base forward, which runs without gradients, on the data's groups or on a
  group starting at every response token (`chain_starts`), with the base's soft targets (KL) if asked.
"""

from __future__ import annotations

import math

import torch
from torch import nn

from hamburger.core.lora import adapters_disabled
from hamburger.core.model import HamburgerModel, PromptStates, TeacherStates, TrainOutput
from hamburger.core.packing import PackedBatch, TrainBatch, as_packed, group_starts, pad_group


def lr_at(step: int, total: int, peak: float, floor: float, warmup: int) -> float:
    """Learning rate of 0-based optimizer step ``step``: linear warm-up, then cosine from peak to floor."""
    floor = min(floor, peak)
    if step < warmup:
        return peak * (step + 1) / warmup
    span = max(1, total - warmup)
    progress = min(1.0, (step - warmup) / span)
    return floor + (peak - floor) * 0.5 * (1 + math.cos(math.pi * progress))


# Layout of the stats vector: counts and sums that add across micro-batches and processes.
T, TOKEN_LOSS, STOP_LOSS, KL, STOP_OK, REAL_POS, PADDED_POS, RESPONSE, HIDDEN, HEAD = range(10)


def empty_stats(max_steps: int, device=None) -> torch.Tensor:
    return torch.zeros(HEAD + 4 * max_steps, dtype=torch.float64, device=device)


def batch_stats(out: TrainOutput, max_steps: int, real_pos: int, padded_pos: int,
                response_tokens: int | None = None, fresh: torch.Tensor | None = None) -> torch.Tensor:
    """Sums over one micro-batch: [tokens, token loss, stop loss, kl, stop correct, positions, padded
    positions, response tokens, hidden term, correct tokens at micro index 0..k-1, tokens at micro index 0..k-1,
    the same two on fresh tokens].

    "tokens" are the predictions the loss averages over; ``response_tokens`` (default: as many) the rows'
    response tokens, which stage msd's chains (`msd_chains: all`) predict several times each. ``fresh``: a bool
    per prediction, True where its target is fresh (`plausibility.repeated_ngram_mask` False); without it the
    fresh sums stay 0. The sums stay on the outputs' device: no host sync per step (the trainer reads them once
    per log line)."""
    n = out.targets.numel()
    s = empty_stats(max_steps, out.targets.device)
    s[T] = n
    s[TOKEN_LOSS] = out.token_loss.detach().double() * n
    s[STOP_LOSS] = out.stop_loss.detach().double() * n
    s[KL] = out.kl.detach().double() * n if out.kl is not None else 0.0
    s[HIDDEN] = out.hidden.detach().double() * n if out.hidden is not None else 0.0
    s[STOP_OK] = ((out.stop_logits.detach() > 0).float() == out.stop_targets).sum().double()
    s[REAL_POS], s[PADDED_POS] = real_pos, padded_pos
    s[RESPONSE] = n if response_tokens is None else response_tokens
    correct = (out.predictions == out.targets).double()
    s[HEAD:HEAD + max_steps] = s[HEAD:HEAD + max_steps].index_add(0, out.micro_index, correct)
    s[HEAD + max_steps:HEAD + 2 * max_steps] = s[HEAD + max_steps:HEAD + 2 * max_steps].index_add(
        0, out.micro_index, torch.ones_like(correct))
    if fresh is not None:
        keep = fresh.to(correct.dtype)
        s[HEAD + 2 * max_steps:HEAD + 3 * max_steps] = s[HEAD + 2 * max_steps:HEAD + 3 * max_steps].index_add(
            0, out.micro_index, correct * keep)
        s[HEAD + 3 * max_steps:] = s[HEAD + 3 * max_steps:].index_add(0, out.micro_index, keep)
    return s


def summarize(s: torch.Tensor, max_steps: int, kl_weight: float, stop_weight: float, hidden_weight: float = 0.0,
              token_weight: float = 1.0) -> dict:
    """Metrics from summed stats: mean losses per response token, accuracies, padding fraction; ``hidden`` (the
    hidden-state term, a mean per batch weighted by its tokens) only when its weight is > 0."""
    n = max(float(s[T]), 1.0)
    token_loss, stop_loss, kl = float(s[TOKEN_LOSS]) / n, float(s[STOP_LOSS]) / n, float(s[KL]) / n
    hidden = float(s[HIDDEN]) / n
    correct, count = s[HEAD:HEAD + max_steps], s[HEAD + max_steps:HEAD + 2 * max_steps]
    fresh_correct, fresh_count = s[HEAD + 2 * max_steps:HEAD + 3 * max_steps], s[HEAD + 3 * max_steps:]
    out = {"tokens": int(s[T]), "response_tokens": int(s[RESPONSE]),
           "loss": token_weight * token_loss + stop_weight * stop_loss + kl_weight * kl + hidden_weight * hidden,
           "token_loss": token_loss, "stop_loss": stop_loss, "kl": kl,
           "token_acc": float(correct.sum()) / n, "stop_acc": float(s[STOP_OK]) / n,
           "token_acc_micro": [round(float(c / m), 4) if m else None for c, m in zip(correct, count)]}
    if fresh_count.sum() > 0:
        out["token_acc_micro_fresh"] = [round(float(c / m), 4) if m else None
                                        for c, m in zip(fresh_correct, fresh_count)]
    if hidden_weight > 0:
        out["hidden"] = hidden
    if s[PADDED_POS] > 0:
        out["padding"] = 1.0 - float(s[REAL_POS]) / float(s[PADDED_POS])
    return out


# The groups the MSD is teacher-forced on: the data's "groups"; stage msd: "all", a group from every response token
# (`chain_starts`); stage full: "windows", the next max_steps tokens after every slot (`packing.group_windows`).
MSD_CHAINS = ("groups", "all", "windows")


def chain_starts(batch: TrainBatch, max_steps: int, chains: str, stride: int = 1
                 ) -> tuple[list[int], list[int], list[list[int]], list[int]]:
    """The groups stage msd teacher-forces: (row, column of the feature position, padded tokens, size) each.

    ``groups``: the data's own groups. ``all``: a group of up to max_steps tokens starts at every
    ``stride``-th response token (from an offset that varies between rows), so the micro positions learn
    from (nearly) every context of the row: the MSD is trained like a multi-token-prediction head, for
    the cost of one more LM-head row per micro position.
    """
    rows, cols, tokens, sizes = [], [], [], []
    for b, (p, r, g) in enumerate(zip(batch.prompt_ids, batch.response_ids, batch.groups)):
        if chains == "groups":
            starts = group_starts(g)
            ends = [s + n for s, n in zip(starts, g)]
        else:
            starts = list(range(sum(r) % stride, len(r), stride))
            ends = [min(len(r), s + max_steps) for s in starts]
        for start, end in zip(starts, ends):
            rows.append(b)
            cols.append(len(p) - 1 + start)
            tokens.append(pad_group(r[start:end], max_steps))
            sizes.append(end - start)
    return rows, cols, tokens, sizes


def msd_forward(model: HamburgerModel, batch: TrainBatch | PackedBatch, chains: str = "groups", stride: int = 1
                ) -> TrainOutput:
    """Stage "msd": only the micro-step decoder and stop head learn, on unmerged base features.

    The base runs once over [prompt, response] without gradients (no merging, so the embedder is
    unused); the features for a group are those at the token before it, which is what the merged
    model sees when every earlier group is a single token. ``chains`` picks the groups
    (`chain_starts`). With ``kl_weight`` > 0 the micro tokens also learn the base's own distribution
    at their position (soft targets, read from the same no-grad forward). Returns a `TrainOutput` in
    the same token order as `HamburgerModel.training_forward`.
    """
    k = model.config.max_steps
    device = model.device
    packed = as_packed(batch, k, device)
    ids, positions, mask = model.unmerged_inputs(packed)
    with torch.no_grad():
        final, features = model.base_forward(model.embed(ids), positions, mask)
    chains_at = chain_starts(packed.batch, k, chains, stride)
    rows, cols, tokens, sizes = (torch.tensor(x, device=device) for x in chains_at)
    teacher, micro = None, None
    if model.config.kl_weight > 0:
        j = torch.arange(k, device=device)[None, :]
        in_group = j < sizes[:, None]
        # The base's prediction of the token j of a chain is at the position right before it: (row, col + j).
        where = (rows[:, None] * ids.shape[1] + cols[:, None] + j)[in_group]
        micro = j.expand_as(in_group)[in_group] > 0  # the KL covers the micro tokens only
        teacher = TeacherStates(final.flatten(0, 1), model.base.get_output_embeddings(), where, final=model.final_logits)
    return model.group_outputs(final[rows, cols], model.msd_features(final, features, (rows, cols)), tokens, sizes,
                               teacher, micro)


class Objective(nn.Module):
    """What the (DDP/FSDP-wrapped) network computes for a batch: the teacher's states when the KL
    term is on (no gradient), then the training forward of the configured stage."""

    def __init__(self, model: HamburgerModel, stage: str, teacher_base: nn.Module | None = None,
                 msd_chains: str = "groups", msd_stride: int = 1):
        super().__init__()
        self.model, self.stage, self.msd_chains, self.msd_stride = model, stage, msd_chains, msd_stride
        self.prompts_frozen = not model.prompt_trains()  # (which weights train is settled before the objective)
        self.__dict__["teacher_base"] = teacher_base  # not a submodule: never trained, sharded or saved

    def teacher(self, batch: TrainBatch | PackedBatch, prompt: PromptStates | None = None) -> TeacherStates | None:
        """The unmerged, unadapted base at every response token (None when kl_weight is 0): its hidden states
        and LM head, so that its logits can be made a chunk at a time (`TeacherStates`). With ``prompt`` (the
        prompts' states, `HamburgerModel.prompt_states`) it runs the response tokens only."""
        model = self.model
        if model.config.kl_weight <= 0 or self.stage == "msd":  # stage msd reads it from its own base forward
            return None
        if self.teacher_base is None:  # frozen base, or LoRA with its adapters switched off
            with adapters_disabled(model.base):
                return model.teacher_states(batch, prompt)
        own = model.base
        try:  # full fine-tuning: swap the frozen original in for one no-grad forward
            model.base = self.teacher_base
            return model.teacher_states(batch)
        finally:
            model.base = own

    def forward(self, batch: TrainBatch | PackedBatch) -> TrainOutput:
        """``batch``: packed by the batching side (`batching.collate`), or a `TrainBatch` packed here once."""
        model = self.model
        batch = as_packed(batch, model.config.max_steps, model.device)
        if self.stage == "msd":
            return msd_forward(model, batch, self.msd_chains, self.msd_stride)
        # When nothing that trains acts on a prompt slot, the prompts run once, without gradients, for the
        # teacher and the training forward alike: no backward over them, and the teacher's share is reused.
        prompt = model.prompt_states(batch) if model.reuse_prompt and self.prompts_frozen else None
        return model(batch, self.teacher(batch, prompt), prompt, self.msd_chains == "windows")
