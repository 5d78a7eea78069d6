"""The HAMburger model: a base causal LM between a compositional embedder and a micro-step decoder.

The grafted modules share the base's embedding table and LM head. This module holds the math
shared by training and inference: the base forward with feature taps, and the teacher-forced
training forward with its loss (docs/method.md, "Training objective").
"""

from __future__ import annotations

import contextlib
from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch import nn
from transformers import StaticCache

from hamburger.core.config import HamburgerConfig
from hamburger.core.lora import adapters_gated
from hamburger.core.masks import slot_mask
from hamburger.core.modules import CompositionalEmbedder, MicroStepDecoder, StopHead, base_decoder_stack
from hamburger.core.packing import PackedBatch, TrainBatch, as_packed

GRAFTED = ("embedder", "decoder", "stop_head")


@dataclass
class TrainOutput:
    """Per response token (rows in order, tokens in order): logits, stop logits and targets."""

    loss: torch.Tensor
    token_loss: torch.Tensor
    stop_loss: torch.Tensor
    kl: torch.Tensor | None
    token_logits: torch.Tensor  # [T, V]
    stop_logits: torch.Tensor  # [T]
    targets: torch.Tensor  # [T] the response tokens
    stop_targets: torch.Tensor  # [T] 1.0 at each group's last token
    micro_index: torch.Tensor  # [T] 0 for a group's first token (skip path), j for the MSD's j-th token


class HamburgerModel(nn.Module):
    def __init__(self, base: nn.Module, config: HamburgerConfig):
        super().__init__()
        self.base = base
        self.config = config.for_base(base.config)
        self.embedder = CompositionalEmbedder(self.config).to(self.dtype)
        self.decoder = MicroStepDecoder(base, self.config)
        self.stop_head = StopHead(self.config).to(self.dtype)
        self._taps: list[torch.Tensor] | None = None
        self._head_t: tuple[tuple, torch.Tensor] | None = None  # (weight identity, transposed copy)
        self._compiled_stack = None  # set by `compile_decoding`
        stack = base_decoder_stack(base)
        for i in self.config.tap_layers:
            stack.layers[i].register_forward_hook(self._record_tap)

    # ----------------------------------------------------------------- shared parts of the base
    @property
    def dtype(self) -> torch.dtype:
        return next(self.base.parameters()).dtype

    @property
    def device(self) -> torch.device:
        return next(self.base.parameters()).device

    @property
    def context_length(self) -> int:
        cfg = self.base.config.get_text_config()
        return int(getattr(cfg, "max_position_embeddings", 1 << 30))

    def embed(self, ids: torch.Tensor) -> torch.Tensor:
        return self.base.get_input_embeddings()(ids)

    def lm_head(self, hidden: torch.Tensor) -> torch.Tensor:
        return self.base.get_output_embeddings()(hidden)

    def decode_logits(self, hidden: torch.Tensor, max_rows: int = 1) -> torch.Tensor:
        """The LM head for decoding, no gradients. On CPU up to ``max_rows`` rows go through a transposed,
        contiguous copy of the head's weight (made once): MKL's fp32 product of a few rows with a [d, V] matrix
        is faster than with the stored [V, d] layout on the CPUs we tried. Same math, another summation order."""
        head = self.base.get_output_embeddings()
        if (hidden.device.type != "cpu" or hidden.ndim != 2 or hidden.shape[0] > max_rows or torch.is_grad_enabled()
                or torch.compiler.is_compiling()):  # (a compiled graph uses the head as it is)
            return head(hidden)
        w = head.weight
        key = (w.data_ptr(), w._version, w.dtype, tuple(w.shape))
        if self._head_t is None or self._head_t[0] != key:
            self._head_t = (key, w.detach().t().contiguous())
        out = hidden.to(w.dtype) @ self._head_t[1]
        return out + head.bias if getattr(head, "bias", None) is not None else out

    def grafted_parameters(self):
        for name in GRAFTED:
            yield from getattr(self, name).parameters()

    def grafted_state_dict(self) -> dict[str, torch.Tensor]:
        return {f"{name}.{k}": v for name in GRAFTED for k, v in getattr(self, name).state_dict().items()}

    def load_grafted_state_dict(self, state: dict[str, torch.Tensor]) -> None:
        for name in GRAFTED:
            part = {k[len(name) + 1:]: v for k, v in state.items() if k.startswith(name + ".")}
            getattr(self, name).load_state_dict(part)

    # ----------------------------------------------------------------- base forward with taps
    def _record_tap(self, module, inputs, output):
        if self._taps is not None:
            self._taps.append(output[0] if isinstance(output, tuple) else output)

    def base_forward(self, inputs_embeds, position_ids, attention_mask, cache=None, merged_slots=None):
        """One base forward -> (final normed hidden [B, S, d], features [B, S, m, d]).

        ``attention_mask`` is an explicit [B, 1, S, slots] boolean mask: positions jump after merges,
        so nothing may be inferred from them. ``merged_slots`` [B, S] marks inputs that merge 2+ tokens
        (None: none do); with ``lora_scope: merged`` the base's adapters apply there only.
        """
        self._taps = []
        gated = contextlib.nullcontext()
        if self.config.lora_scope == "merged":
            if merged_slots is None:
                merged_slots = torch.zeros(inputs_embeds.shape[:2], dtype=torch.bool, device=inputs_embeds.device)
            gated = adapters_gated(self.base, merged_slots)
        stack = base_decoder_stack(self.base)
        if self._compiled_stack is not None and inputs_embeds.shape[1] == 1 and isinstance(cache, StaticCache):
            stack = self._compiled_stack
        try:
            with gated:
                out = stack(inputs_embeds=inputs_embeds, position_ids=position_ids, attention_mask=attention_mask,
                            past_key_values=cache, use_cache=cache is not None)
            taps = self._taps
        finally:
            self._taps = None
        final = out.last_hidden_state
        features = torch.stack(taps + [final], dim=2)
        if stack is self._compiled_stack:  # CUDA-graph outputs are overwritten by the next replay: own them
            final, features = final.clone(), features.clone()
        return final, features

    def compile_decoding(self, mode: str | None = "reduce-overhead", backend: str = "inductor") -> None:
        """Compile the base's decoder stack for macro steps: one input per row on a static slot cache
        (`Generation(static_cache=True)`), so every step has the same shapes; "reduce-overhead" adds CUDA
        graphs on a GPU. The prefill (variable length) and the micro-step decoder stay eager."""
        stack = base_decoder_stack(self.base)
        self._compiled_stack = torch.compile(stack, mode=mode, backend=backend, dynamic=False)

    def micro_hidden(self, features: torch.Tensor, prev_tokens: torch.Tensor) -> torch.Tensor:
        """Teacher-forced MSD: features [N, m, d], tokens t_1..t_j [N, j] -> hiddens for t_2..t_{j+1} [N, j, d]."""
        m = features.shape[1]
        x = torch.cat([features, self.embed(prev_tokens)], 1)
        return self.decoder(x)[:, m:]

    # ----------------------------------------------------------------- training forward
    def forward(self, batch: TrainBatch | PackedBatch, teacher_logits: torch.Tensor | None = None) -> "TrainOutput":
        """`training_forward`, so that DDP/FSDP wrappers (which call forward) work unchanged."""
        return self.training_forward(batch, teacher_logits)

    def training_forward(self, batch: TrainBatch | PackedBatch, teacher_logits: torch.Tensor | None = None
                         ) -> TrainOutput:
        """Teacher-forced forward over merged sequences; loss = CE + w_stop * BCE (+ w_kl * KL).

        ``batch``: a `PackedBatch` (the batching side builds it once per batch), or a `TrainBatch` packed here."""
        cfg, device = self.config, self.device
        packed = as_packed(batch, cfg.max_steps, device)
        group_tokens, group_sizes = packed.group_tokens, packed.group_sizes
        rows, slots = packed.valid.shape

        # Base input: prompt tokens, then one merged vector for every group but the last.
        merged = self.embedder(self.embed(group_tokens), group_sizes)
        embeds = torch.zeros(rows, slots, cfg.hidden_size, dtype=self.dtype, device=device)
        embeds = embeds.index_put(packed.prompt_at, self.embed(packed.prompt_tokens))
        merged_slots = torch.zeros(rows, slots, dtype=torch.bool, device=device)  # inputs of 2+ tokens
        if packed.merged_group.numel():
            merge_g = packed.merged_group
            embeds = embeds.index_put(packed.merged_at, merged[merge_g])
            merged_slots = merged_slots.index_put(packed.merged_at, group_sizes[merge_g] > 1)
        mask = slot_mask(packed.valid)
        final, features = self.base_forward(embeds, packed.positions, mask, merged_slots=merged_slots)
        group_features = features[packed.before_group]  # [G, m, d]

        out = self.group_outputs(final[packed.before_group], group_features, group_tokens, group_sizes)
        loss = out.loss
        if teacher_logits is not None:
            out.kl = kl_to_teacher(out.token_logits, teacher_logits)
            out.loss = loss + cfg.kl_weight * out.kl
        return out

    def group_outputs(self, skip_hidden: torch.Tensor, features: torch.Tensor, group_tokens: torch.Tensor,
                      group_sizes: torch.Tensor) -> TrainOutput:
        """Token and stop predictions of every group, teacher-forced, and the loss without KL.

        skip_hidden [G, d]: the final normed base state before each group (its first token);
        features [G, m, d]: the MSD features there; group_tokens [G, max_steps] (padded); group_sizes [G].
        """
        k = self.config.max_steps
        hidden = skip_hidden[:, None]
        if k > 1:
            hidden = torch.cat([hidden, self.micro_hidden(features, group_tokens[:, :k - 1])], 1)
        j = torch.arange(k, device=hidden.device)[None, :]
        in_group = j < group_sizes[:, None]
        selected = hidden[in_group]  # rows in order, groups in order, tokens in order
        logits = self.lm_head(selected).float()
        targets = group_tokens[in_group]
        stop_logits = self.stop_head(selected, self.embed(targets)).float()
        stop_targets = (j == group_sizes[:, None] - 1)[in_group].float()
        if self.config.stop_target == "accepted":
            # Entry i + 1 is the next token of the same group wherever entry i is not its group's last.
            wrong_next = torch.zeros_like(stop_targets)
            wrong_next[:-1] = (logits[1:].detach().argmax(-1) != targets[1:]).float()
            stop_targets = torch.maximum(stop_targets, wrong_next)
        micro_index = j.expand_as(in_group)[in_group]
        token_loss = F.cross_entropy(logits, targets)
        stop_loss = F.binary_cross_entropy_with_logits(stop_logits, stop_targets)
        loss = token_loss + self.config.stop_loss_weight * stop_loss
        return TrainOutput(loss, token_loss, stop_loss, None, logits, stop_logits, targets, stop_targets, micro_index)

    def unmerged_inputs(self, batch: TrainBatch | PackedBatch) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """(ids, positions, mask) of the ordinary, unmerged [prompt, response] sequences, right-padded."""
        packed = as_packed(batch, self.config.max_steps, self.device)
        ids = packed.ids
        positions = torch.arange(ids.shape[1], device=ids.device)[None].expand(ids.shape[0], -1)
        return ids, positions, slot_mask(packed.ids_valid)

    @torch.no_grad()
    def teacher_logits(self, batch: TrainBatch | PackedBatch) -> torch.Tensor:
        """The unmerged base model's logits for every response token, in TrainOutput order [T, V]."""
        packed = as_packed(batch, self.config.max_steps, self.device)
        ids, positions, mask = self.unmerged_inputs(packed)
        self._taps = None
        out = base_decoder_stack(self.base)(input_ids=ids, position_ids=positions, attention_mask=mask)
        return self.lm_head(out.last_hidden_state[packed.response_at]).float()


def kl_to_teacher(logits: torch.Tensor, teacher_logits: torch.Tensor) -> torch.Tensor:
    """Mean over tokens of KL(teacher || model), both given as logits [T, V]."""
    teacher = F.log_softmax(teacher_logits.float(), -1)
    student = F.log_softmax(logits.float(), -1)
    return F.kl_div(student, teacher, log_target=True, reduction="batchmean")
