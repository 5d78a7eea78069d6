"""The HAMburger model: a base causal LM between a compositional embedder and a micro-step decoder.

The grafted modules share the base's embedding table and LM head. This module holds the math
shared by training and inference: the base forward with feature taps, and the teacher-forced
training forward with its loss (docs/method.md, "Training objective").
"""

from __future__ import annotations

import contextlib
from dataclasses import dataclass, replace

import torch
import torch.nn.functional as F
from torch import nn
from torch.utils.checkpoint import checkpoint
from transformers import DynamicCache, StaticCache
from transformers.cache_utils import DynamicLayer, DynamicSlidingWindowLayer

from hamburger.core.config import HamburgerConfig
from hamburger.core.final_logits import FinalLogits
from hamburger.core.lean import LeanStack
from hamburger.core.lora import adapters_disabled, adapters_gated, is_adapter_weight, lora_layers
from hamburger.core.masks import FOREVER, MASK_READERS, as_read_by, by_layer_type, slot_mask
from hamburger.core.modules import (COMPILE_REGIONS, CompositionalEmbedder, Drafter, MicroStepDecoder, StopHead,
                                    base_decoder_stack, layerwise_compiled)
from hamburger.core.packing import PackedBatch, TrainBatch, as_packed, group_windows, input_sizes
from hamburger.errors import HamburgerError

GRAFTED = ("embedder", "decoder", "stop_head")


@dataclass
class TrainOutput:
    """Per response token (rows in order, tokens in order): predictions, stop logits and targets.

    ``token_logits`` (the full fp32 [T, V] logits) exist only on the unchunked path (``loss_chunk`` 0); every
    consumer that needs no more than the argmax reads ``predictions``."""

    loss: torch.Tensor
    token_loss: torch.Tensor
    stop_loss: torch.Tensor
    kl: torch.Tensor | None
    predictions: torch.Tensor  # [T] argmax of the token logits
    stop_logits: torch.Tensor  # [T]
    targets: torch.Tensor  # [T] the response tokens
    stop_targets: torch.Tensor  # [T] 1.0 at each group's last token
    micro_index: torch.Tensor  # [T] 0 for a group's first token (skip path), j for the MSD's j-th token
    token_logits: torch.Tensor | None = None  # [T, V] fp32; None on the chunked path
    hidden: torch.Tensor | None = None  # the hidden-state term (`hidden_match_loss`), None when it is off


@dataclass
class TeacherStates:
    """The KL teacher as its final normed hidden states and its LM head: its logits are made where they are
    used, all at once (`logits()`) or a chunk of rows at a time inside the chunked loss, never kept whole.

    ``index`` [T] maps response token i to its hidden row (None: row i); a row used by several tokens (stage msd's
    overlapping chains) goes through the head once per call. A tensor of logits [T, V] is also accepted wherever a
    teacher is (`as_teacher`)."""

    hidden: torch.Tensor  # [N, d] (no grad)
    head: nn.Module  # the teacher's LM head (its LoRA adapters, if any, are switched off when used)
    index: torch.Tensor | None = None
    layers: torch.Tensor | None = None  # [N, L, d] outputs of the layers `HamburgerModel.hidden_layers` (or None)
    final: FinalLogits = FinalLogits()  # what the base's causal LM does to its head's output

    def at(self, where: torch.Tensor) -> "TeacherStates":
        """The teacher of the response tokens ``where`` [T'] (indices into the current tokens), in that order."""
        return replace(self, index=where if self.index is None else self.index[where])

    def logits(self, rows: torch.Tensor | slice = slice(None)) -> torch.Tensor:
        """fp32 logits [len(rows), V] of the response tokens ``rows`` (a slice, indices or a boolean mask), no grad."""
        with torch.no_grad(), adapters_disabled(self.head):
            if self.index is None:
                return self.final(self.head(self.hidden[rows])).float()
            unique, inverse = torch.unique(self.index[rows], return_inverse=True)
            return self.final(self.head(self.hidden[unique])).float()[inverse]


@dataclass
class PromptStates:
    """Every row's prompt through the unadapted base once, without gradients: its final states, MSD features and
    keys and values. Training shares them between the KL teacher and the training forward whenever no trained
    weight acts on a prompt slot (`HamburgerModel.prompt_trains`), so both run only the slots after the prompts.

    Joined layout: the prompt slots [B, P] (right-padded to the longest prompt), then the slots run after them."""

    final: torch.Tensor  # [B, P, d]
    features: torch.Tensor  # [B, P, m, d]
    kv: list[tuple[torch.Tensor, torch.Tensor]]  # per base layer: keys, values [B, heads, P, head_dim]
    lengths: torch.Tensor  # [B] prompt tokens of each row

    @property
    def valid(self) -> torch.Tensor:
        return torch.arange(self.final.shape[1], device=self.lengths.device)[None] < self.lengths[:, None]

    def cache(self) -> DynamicCache:
        """A fresh cache holding the prompts (each forward after them appends to its own)."""
        return DynamicCache(ddp_cache_data=self.kv)

    def padded(self, tail: torch.Tensor) -> torch.Tensor:
        """A tensor [B, R, ...] of the slots run after the prompts, in the joined layout: zeros at the prompt slots
        (for states recorded only after them, which are never read there)."""
        return torch.cat([tail.new_zeros(tail.shape[0], self.final.shape[1], *tail.shape[2:]), tail], 1)

    def joined(self, at: tuple[torch.Tensor, torch.Tensor]) -> tuple[torch.Tensor, torch.Tensor]:
        """(rows, cols) of a layout whose row b has its prompt at columns 0..len-1 -> the same places, joined."""
        rows, cols = at
        length = self.lengths[rows]
        return rows, torch.where(cols < length, cols, self.final.shape[1] + cols - length)


def as_teacher(teacher: "TeacherStates | torch.Tensor | None") -> "TeacherStates | None":
    """A teacher given as logits [T, V] becomes `TeacherStates` with an identity head."""
    return TeacherStates(teacher, nn.Identity()) if isinstance(teacher, torch.Tensor) else teacher


class HamburgerModel(nn.Module):
    def __init__(self, base: nn.Module, config: HamburgerConfig):
        super().__init__()
        base_decoder_stack(base)  # (refuses a base whose stack it cannot graft onto, before reading its config)
        recurrent = {type(layer).__name__ for layer in DynamicCache(config=base.config.get_text_config()).layers
                     if not isinstance(layer, (DynamicLayer, DynamicSlidingWindowLayer))}
        if recurrent:
            raise HamburgerError(f"{type(base).__name__} keeps state that is not keys and values per position in some "
                                 f"layers ({', '.join(sorted(recurrent))}: Mamba or linear attention); HAMburger "
                                 f"stores one key/value entry per token group, so every layer must attend")
        attention = base.config._attn_implementation
        if attention not in MASK_READERS:
            raise HamburgerError(f"{type(base).__name__} attends with {attention!r}, which cannot read HAMburger's "
                                 f"explicit slot masks (positions jump after merges): load it with attn_implementation "
                                 f"{' or '.join(map(repr, MASK_READERS))}")
        self.base = base
        # what the base's causal LM does to its head's output (Granite's and Cohere's scales, Gemma 2's cap): every
        # path here that reads the head itself does it too (`logits_of`)
        self.final_logits = FinalLogits.of(base)
        self.config = config.for_base(base.config)
        # the grafted modules live where the base does (a base already on a GPU gets them on that GPU too)
        self.embedder = CompositionalEmbedder(self.config).to(self.device, self.dtype)
        self.decoder = MicroStepDecoder(base, self.config)
        self.stop_head = StopHead(self.config).to(self.device, self.dtype)
        self._taps: list[torch.Tensor] | None = None
        self._head_t: tuple[tuple, torch.Tensor] | None = None  # (weight identity, transposed copy)
        self._compiled_stack = None  # set by `compile_decoding`
        self.lean = True  # inference forwards on a cache take `LeanStack` where the base's layers allow
        # ... and there, adapters whose one set acts at every position of a forward (a folded row's steps under
        # ``after_fold``, ``lora_scope: all``) read W + (alpha / r) B A, built once per layer: one more copy of the
        # adapted weights for the cost of a plain projection (False: the adapters' own products)
        self.fuse_adapters = True
        # verify_fold: adapters at ``after_fold`` (a fold reader) act on sampling rows only; greedy rows read their
        # folds with the base (a checkpoint's fold reader judged for sampled decoding: `add_fold_reader`)
        self.fold_reader_sampled_only = False
        self._lean: tuple[nn.Module, LeanStack | None] | None = None  # (the stack it was built for, it)
        self._train_compile: dict | None = None  # torch.compile options of `compile_training`
        self._compiled_train: list[tuple[nn.Module, bool, nn.Module]] = []  # (decoder stack, whole?, compiled form)
        self._train_compile_region = "layer"  # `compile_training`'s region
        self.loss_chunk = 0  # training: response tokens per LM-head/loss chunk (0 = all at once; `token_losses`)
        self.reuse_prompt = True  # training: run frozen prompts once, without gradients (`prompt_trains`)
        self.hidden_weight = 0.0  # training: weight of the hidden-state term (`match_hidden`)
        self.hidden_layers: tuple[int, ...] = ()  # training: the base layers it compares (`match_hidden`)
        # verify mode: the token ids the MSD's drafts are restricted to (a checkpoint's draft_vocab.safetensors)
        self.draft_vocab: torch.Tensor | None = None
        # verify mode: the base's own confident n-gram continuations (a checkpoint's draft_ngrams.safetensors)
        self.draft_ngrams = None
        # verify mode: a drafter trained for verify's inputs (a checkpoint's verify_drafter.safetensors; `Drafter`)
        self.verify_drafter: Drafter | None = None
        self._states: list[torch.Tensor] | None = None  # outputs of hidden_layers during a recording forward
        self._state_hooks: set[int] = set()
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

    @property
    def vocab_size(self) -> int:
        """The width of the logits: the LM head's rows."""
        return self.base.get_output_embeddings().weight.shape[0]

    def embed(self, ids: torch.Tensor) -> torch.Tensor:
        return self.base.get_input_embeddings()(ids)

    def lm_head(self, hidden: torch.Tensor) -> torch.Tensor:
        return self.logits_of(self.base.get_output_embeddings()(hidden))

    def logits_of(self, head_output: torch.Tensor) -> torch.Tensor:
        """The base's logits from its LM head's output, as its causal LM makes them (`FinalLogits`)."""
        return self.final_logits(head_output)

    def decode_logits(self, hidden: torch.Tensor, max_rows: int = 1) -> torch.Tensor:
        """The LM head for decoding, no gradients. On CPU up to ``max_rows`` rows go through a transposed,
        contiguous copy of the head's weight (made once): MKL's fp32 product of a few rows with a [d, V] matrix
        is faster than with the stored [V, d] layout on the CPUs we tried. Same math, another summation order."""
        head = self.base.get_output_embeddings()
        if (hidden.device.type != "cpu" or hidden.ndim != 2 or hidden.shape[0] > max_rows or torch.is_grad_enabled()
                or torch.compiler.is_compiling()):  # (a compiled graph uses the head as it is)
            return self.logits_of(head(hidden))
        w = head.weight
        key = (w.data_ptr(), w._version, w.dtype, tuple(w.shape))
        if self._head_t is None or self._head_t[0] != key:
            self._head_t = (key, w.detach().t().contiguous())
        out = hidden.to(w.dtype) @ self._head_t[1]
        return self.logits_of(out + head.bias if getattr(head, "bias", None) is not None else out)

    def grow_decoder(self, layers: int) -> None:
        """Deepen the micro-step decoder to ``layers`` layers; every output stays the same (`MicroStepDecoder.grow`)."""
        self.decoder.grow(layers)
        self.config.decoder_layers = layers

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

    def _record_state(self, module, inputs, output):
        if self._states is not None:
            self._states.append(output[0] if isinstance(output, tuple) else output)

    def match_hidden(self, weight: float, layers: list[int] | tuple[int, ...] = ()) -> None:
        """Training: add ``weight`` x the hidden-state term (`hidden_match_loss`) on the outputs of the base layers
        ``layers`` (empty: every layer). The KL teacher then also returns those layers' states."""
        depth = len(base_decoder_stack(self.base).layers)
        layers = tuple(sorted(set(layers))) or tuple(range(depth))
        if min(layers) < 0 or max(layers) >= depth:
            raise HamburgerError(f"bad config value: hidden_layers must lie in 0..{depth - 1}, got {list(layers)}")
        self.hidden_weight, self.hidden_layers = float(weight), layers if weight > 0 else ()

    @contextlib.contextmanager
    def _recording(self, on: bool):
        """Collect the outputs of `hidden_layers` in the one base forward inside: ``box["states"]`` [..., L, d]
        (None when ``on`` is False or no layer is matched). Hooks the current base's layers on first use (a full
        fine-tune's teacher copy is swapped in as ``self.base`` for its forward). Every layer runs the same hook, which
        keeps every layer's output, and the matched ones are picked afterwards: a hook that differed per layer would
        make layer-by-layer compiling (`compile_region`) recompile the layer code for every layer."""
        box: dict[str, torch.Tensor | None] = {"states": None}
        if not (on and self.hidden_layers):
            yield box
            return
        for layer in base_decoder_stack(self.base).layers:
            if id(layer) not in self._state_hooks:
                layer.register_forward_hook(self._record_state)
                self._state_hooks.add(id(layer))
        self._states = []
        try:
            yield box
            box["states"] = torch.stack([self._states[i] for i in self.hidden_layers], dim=-2)
        finally:
            self._states = None

    def base_forward(self, inputs_embeds, position_ids, attention_mask, cache=None, merged_slots=None,
                     merged_before=None, training: bool = False):
        """One base forward -> (final normed hidden [B, S, d], features [B, S, m, d]).

        ``attention_mask`` is an explicit [B, 1, S, slots] boolean mask: positions jump after merges,
        so nothing may be inferred from them (for a base with a sliding window, a mask per layer type as
        `masks.by_layer_type` makes them, or the windowed one). ``merged_slots`` [B, S] marks inputs that merge 2+
        tokens (None: none do; ``lora_scope: after_fold`` also marks a row's first input after a fold);
        ``merged_before`` [B] marks rows whose cached slots hold a merged one (after_fold: or that folded; None: none).
        They gate the base's adapters by ``lora_scope`` (`adapter_gate`). ``training``: a training forward (one
        with no ``cache`` always is), which runs the stack of `compile_training`.
        """
        gated = contextlib.nullcontext()
        if self.config.lora_scope != "all" and lora_layers(self.base):
            gate = self.adapter_gate(inputs_embeds.shape[:2], inputs_embeds.device, merged_slots, merged_before)
            # Inference where no adapter acts (every step of a decode that merges nothing): the same outputs, without
            # the adapters' matmuls; where one set acts everywhere (a folded row's steps, after_fold), without the
            # gate's products. Training keeps the zero gate, so the adapters still get (zero) gradients.
            some, every = True, False
            if not torch.is_grad_enabled():
                some, every = torch.stack([gate.any(), gate.all()]).tolist()
            if not some:
                gated = adapters_disabled(self.base)
            elif not (every and gate.ndim == 2):
                gated = adapters_gated(self.base, gate)
        lean = self._lean_stack() if (cache is not None and not training and not torch.is_grad_enabled()
                                      and self._states is None) else None
        if lean is not None and not (self._compiled_stack is not None and isinstance(cache, StaticCache)):
            with gated:
                final, taps = lean(inputs_embeds, position_ids, attention_mask, cache, self.config.tap_layers,
                                   fuse=self.fuse_adapters)
            return final, torch.stack(taps + [final], dim=2)
        hook = getattr(cache, "attention_hook", None)
        if hook is not None:  # (a cache that attends its own way, read through transformers' layers)
            cache, attention_mask = hook.read_through(attention_mask)
        if cache is None or training:
            stack = self._training_stack(cached=cache is not None)
        else:
            stack = base_decoder_stack(self.base)
        if self._compiled_stack is not None and inputs_embeds.shape[1] == 1 and isinstance(cache, StaticCache):
            stack = self._compiled_stack
        self._taps = []  # (the tap layers' hooks fill it; built after `_lean_stack`, whose check runs the stack)
        attention_mask = self.readable(attention_mask)
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

    def by_layer_type(self, mask: torch.Tensor, query_positions: torch.Tensor,
                      key_positions: torch.Tensor | None = None) -> torch.Tensor | dict[str, torch.Tensor]:
        """The slot mask ``mask`` as the base's layers read it (`masks.by_layer_type`; ``key_positions``: the
        queries' where they are the keys too)."""
        key_positions = query_positions if key_positions is None else key_positions
        return by_layer_type(mask, self.base.config.get_text_config(), query_positions, key_positions)

    def readable(self, mask: torch.Tensor | dict[str, torch.Tensor] | None):
        """A boolean mask (or one per layer type) as the base's attention reads it (`masks.as_read_by`)."""
        return as_read_by(mask, self.base.config._attn_implementation, self.dtype)

    def _lean_stack(self) -> LeanStack | None:
        """The base's `LeanStack` (built and checked once per base; None where it does not run its layers), unless
        ``lean`` is off."""
        if not self.lean:
            return None
        stack = base_decoder_stack(self.base)
        if self._lean is None or self._lean[0] is not stack:
            self._lean = (stack, LeanStack.for_stack(stack))
        return self._lean[1]

    def adapter_gate(self, shape, device, merged_slots=None, merged_before=None) -> torch.Tensor:
        """Where a scoped base's adapters act, [B, S] bool: at merged slots (``lora_scope: merged``), or at every slot
        from the row's first merged one on, cached ones included (``after_merge``; ``after_fold``, whose callers also
        mark a row's first slot after a token-keeping fold, or the row in ``merged_before``). ``merged_and_after``:
        [B, S, 2], set 0 at merged slots, set 1 at the other slots from the row's first merged one on."""
        merged = torch.zeros(shape, dtype=torch.bool, device=device) if merged_slots is None else merged_slots.bool()
        if not self.config.reads_merge_history:
            return merged
        after = merged if merged_before is None else merged | merged_before.bool()[:, None]
        after = after.cummax(1).values
        if self.config.lora_scope in ("after_merge", "after_fold"):
            return after
        return torch.stack([merged, after & ~merged], -1)

    def compile_decoding(self, mode: str | None = "reduce-overhead", backend: str = "inductor") -> None:
        """Compile the base's decoder stack for macro steps: one input per row on a static slot cache
        (`Generation(static_cache=True)`), so every step has the same shapes; "reduce-overhead" adds CUDA
        graphs on a GPU. The prefill (variable length) and the micro-step decoder stay eager."""
        stack = base_decoder_stack(self.base)
        self._compiled_stack = torch.compile(stack, mode=mode, backend=backend, dynamic=False)

    def compile_training(self, backend: str = "inductor", region: str = "layer") -> None:
        """Compile the base's decoder stack for every training forward (training, the KL teacher, stage msd's
        no-grad features): ``torch.compile(dynamic=True)``, since batches vary in rows and length; a batch of one
        row or a new grad mode adds a graph, not one per shape. A full fine-tune's teacher copy gets its own.
        ``region`` "stack" compiles the whole stack as one graph; "layer" compiles each decoder layer, whose code
        is made once and reused by the others (`layerwise_compiled`), except in forwards through a KV cache
        (`_training_stack`)."""
        if region not in COMPILE_REGIONS:
            raise HamburgerError(f"compile region must be one of {COMPILE_REGIONS}, got {region!r}")
        self._train_compile = {"backend": backend, "dynamic": True}
        self._train_compile_region = region

    def _training_stack(self, cached: bool = False) -> nn.Module:
        """The decoder stack of the current ``self.base`` for a training forward, compiled if asked. ``cached``: the
        forward reads or fills a KV cache (prompts computed once), which compiles the whole stack in either region:
        layer by layer, each layer's own cache entry would make the shared layer code recompile for every layer."""
        stack = base_decoder_stack(self.base)
        if self._train_compile is None:
            return stack
        whole = cached or self._train_compile_region == "stack"
        for plain, is_whole, compiled in self._compiled_train:
            if plain is stack and is_whole == whole:
                return compiled
        compiled = (torch.compile if whole else layerwise_compiled)(stack, **self._train_compile)
        self._compiled_train.append((stack, whole, compiled))
        return compiled

    def msd_features(self, final: torch.Tensor, features: torch.Tensor, at: tuple[torch.Tensor, torch.Tensor],
                     context_at: tuple[torch.Tensor, torch.Tensor] | None = None) -> torch.Tensor:
        """What the MSD reads before the groups after the slots ``at`` (rows [G], cols [G]) of a base forward's
        ``final`` [B, S, d] and ``features`` [B, S, m, d]: with ``msd_context`` w, the final states at the places
        ``context_at`` (rows, cols [G, w]; default `context_places` of ``at``), then the features -> [G, w + m, d]."""
        here = features[at]
        if not self.config.msd_context:
            return here
        rows, cols = context_places(at, self.config.msd_context) if context_at is None else context_at
        return torch.cat([final[rows, cols], here], 1)

    def decode_features(self, final: torch.Tensor, features: torch.Tensor, valid: torch.Tensor | None = None,
                        last: torch.Tensor | None = None, previous: torch.Tensor | None = None
                        ) -> tuple[torch.Tensor, torch.Tensor]:
        """What decoding reads at each row's slot ``last`` [B] (default: the last column) of a base forward over new
        slots, ``final`` [B, S, d] and ``features`` [B, S, m, d] (``valid`` [B, S]: the real slots, default all) ->
        (its final state [B, d], the MSD's inputs [B, w + m, d]). With ``msd_context`` w the inputs start with the final
        states of the w slots before it: the new real slots before ``last``, after those before this forward, which
        ``previous`` (the MSD inputs at the cached slot before the new ones) holds; None: nothing is cached, and the
        row's first slot repeats where it has fewer than w (as `context_places` does in training)."""
        b, s = final.shape[:2]
        rows = torch.arange(b, device=final.device)
        if last is None:
            hidden, here = final[:, -1], features[:, -1]
        else:
            hidden, here = final[rows, last], features[rows, last]
        w = self.config.msd_context
        if not w:
            return hidden, here
        if last is None:
            last = torch.full((b,), s - 1, dtype=torch.long, device=final.device)
        before = torch.arange(s, device=final.device)[None] < last[:, None]
        if valid is not None:
            before = before & valid
        if previous is None:  # a row's first real slot, w times
            first = valid.long().argmax(1) if valid is not None else torch.zeros_like(last)
            earlier = final[rows, first][:, None].expand(-1, w, -1)
        else:  # the context there, then that slot's own final state (the last of its inputs)
            earlier = torch.cat([previous[:, :w], previous[:, -1:]], 1)
        chain = torch.cat([earlier, final], 1)
        usable = torch.cat([before.new_ones(b, earlier.shape[1]), before], 1)
        order = torch.arange(chain.shape[1], device=final.device)[None]
        at = torch.where(usable, order, -1).topk(w, dim=1).indices.sort(1).values  # the last w usable, in order
        return hidden, torch.cat([chain[rows[:, None], at], here], 1)

    def micro_hidden(self, features: torch.Tensor, prev_tokens: torch.Tensor) -> torch.Tensor:
        """Teacher-forced MSD: features [N, m, d], tokens t_1..t_j [N, j] -> hiddens for t_2..t_{j+1} [N, j, d]."""
        m = features.shape[1]
        x = torch.cat([features, self.embed(prev_tokens)], 1)
        return self.decoder(x)[:, m:]

    # ----------------------------------------------------------------- training forward
    def forward(self, batch: TrainBatch | PackedBatch, teacher: TeacherStates | torch.Tensor | None = None,
                prompt: PromptStates | None = None, windows: bool = False) -> "TrainOutput":
        """`training_forward`, so that DDP/FSDP wrappers (which call forward) work unchanged."""
        return self.training_forward(batch, teacher, prompt, windows)

    def training_forward(self, batch: TrainBatch | PackedBatch, teacher: TeacherStates | torch.Tensor | None = None,
                         prompt: PromptStates | None = None, windows: bool = False) -> TrainOutput:
        """Teacher-forced forward over merged sequences; loss = CE + w_stop * BCE (+ w_kl * KL).

        ``batch``: a `PackedBatch` (the batching side builds it once per batch), or a `TrainBatch` packed here.
        ``teacher``: the KL teacher of every response token (`teacher_states`, or its logits [T, V]), or None.
        ``prompt``: the prompts' states (`prompt_states`; only where `prompt_trains` is False), or None: the base
        runs the prompts too. Same outputs and gradients either way, up to float summation order.
        ``windows``: the MSD learns the next max_steps tokens after every slot, across the data's group ends
        (`packing.group_windows`), as decoding runs it after every slot; the merged inputs stay the data's groups.
        Outputs then follow the windows' tokens (a token is predicted once per window that holds it)."""
        cfg, device = self.config, self.device
        packed = as_packed(batch, cfg.max_steps, device, cfg.single_tail, cfg.fold_tail)
        group_tokens, group_sizes = packed.group_tokens, packed.group_sizes
        rows, slots = packed.valid.shape

        # Base input: prompt tokens, then the inputs (merged or single) of every group but the last.
        embeds = torch.zeros(rows, slots, cfg.hidden_size, dtype=self.dtype, device=device)
        embeds = embeds.index_put(packed.prompt_at, self.embed(packed.prompt_tokens))
        merged_slots = torch.zeros(rows, slots, dtype=torch.bool, device=device)  # inputs of 2+ tokens
        if packed.input_sizes.numel():
            inputs = self.embedder(self.embed(packed.input_tokens), packed.input_sizes)
            embeds = embeds.index_put(packed.merged_at, inputs)
            merged_slots = merged_slots.index_put(packed.merged_at, packed.input_sizes > 1)
        if cfg.reads_fold_history and packed.first_fold is not None:  # (its adapters act from there on)
            merged_slots = merged_slots | packed.first_fold
        before = packed.before_group
        context_at = context_places(before, cfg.msd_context) if cfg.msd_context else None
        teacher = as_teacher(teacher)
        with self._recording(self.hidden_weight > 0 and teacher is not None and teacher.layers is not None) as rec:
            if prompt is None:
                mask = self.by_layer_type(slot_mask(packed.valid, lifetime=packed.lifetime), packed.positions)
                final, features = self.base_forward(embeds, packed.positions, mask, merged_slots=merged_slots)
            else:  # the prompts' states are given: the base runs the merged slots after them only
                final, features = self.after_prompt(prompt, embeds, packed.positions, packed.merged_tail,
                                                    merged_slots, packed.lifetime)
                before = prompt.joined(before)
                context_at = None if context_at is None else prompt.joined(context_at)
        hidden = None
        if rec["states"] is not None:
            states = rec["states"] if prompt is None else prompt.padded(rec["states"])
            hidden = hidden_match_loss(states[before], teacher.layers, packed.batch.groups, cfg.single_tail)
        if windows:
            group_tokens, group_sizes, where = group_windows(packed.batch, cfg.max_steps, device)
            teacher = None if teacher is None else teacher.at(where)
        out = self.group_outputs(final[before], self.msd_features(final, features, before, context_at), group_tokens,
                                 group_sizes, teacher)
        if hidden is not None:
            out.loss, out.hidden = out.loss + self.hidden_weight * hidden, hidden
        return out

    def group_outputs(self, skip_hidden: torch.Tensor, features: torch.Tensor, group_tokens: torch.Tensor,
                      group_sizes: torch.Tensor, teacher: TeacherStates | None = None,
                      kl_rows: torch.Tensor | None = None) -> TrainOutput:
        """Token and stop predictions of every group, teacher-forced, and the loss (with KL if ``teacher``).

        skip_hidden [G, d]: the final normed base state before each group (its first token);
        features [G, m, d]: the MSD features there; group_tokens [G, max_steps] (padded); group_sizes [G];
        teacher: the KL teacher of each response token; kl_rows [T] bool: the tokens the KL covers (None: all).
        """
        k = self.config.max_steps
        hidden = skip_hidden[:, None]
        if k > 1:
            hidden = torch.cat([hidden, self.micro_hidden(features, group_tokens[:, :k - 1])], 1)
        j = torch.arange(k, device=hidden.device)[None, :]
        in_group = j < group_sizes[:, None]
        selected = hidden[in_group]  # rows in order, groups in order, tokens in order
        targets = group_tokens[in_group]
        token_loss, kl, predictions, logits = self.token_losses(selected, targets, teacher, kl_rows)
        stop_logits = self.stop_head(selected, self.embed(targets)).float()
        stop_targets = (j == group_sizes[:, None] - 1)[in_group].float()
        if self.config.stop_target == "accepted":
            # Entry i + 1 is the next token of the same group wherever entry i is not its group's last.
            wrong_next = torch.zeros_like(stop_targets)
            wrong_next[:-1] = (predictions[1:] != targets[1:]).float()
            stop_targets = torch.maximum(stop_targets, wrong_next)
        micro_index = j.expand_as(in_group)[in_group]
        stop_loss = F.binary_cross_entropy_with_logits(stop_logits, stop_targets)
        loss = self.config.token_loss_weight * token_loss + self.config.stop_loss_weight * stop_loss
        if kl is not None:
            loss = loss + self.config.kl_weight * kl
        return TrainOutput(loss, token_loss, stop_loss, kl, predictions, stop_logits, targets, stop_targets,
                           micro_index, logits)

    def token_losses(self, hidden: torch.Tensor, targets: torch.Tensor, teacher: TeacherStates | None = None,
                     kl_rows: torch.Tensor | None = None):
        """LM head and token losses of the response tokens' hidden states [T, d] -> (cross-entropy, KL(teacher ||
        model) or None, argmax predictions [T], fp32 logits [T, V] or None), the losses as means per token
        (KL: per token of ``kl_rows``, all if None; 0 if there is none).

        ``loss_chunk`` 0: the logits of all T tokens at once (and returned). ``loss_chunk`` n > 0: n tokens at a
        time, the teacher's logits made inside the chunk, and, when gradients flow, each chunk under activation
        checkpointing, so that backward recomputes its logits instead of keeping [T, V] tensors: memory is
        O(n * V) instead of several O(T * V), for one more LM-head product per token (two with a teacher).
        Same losses and gradients up to float summation order."""
        chunk = self.loss_chunk
        if chunk <= 0:
            logits = self.lm_head(hidden).float()
            token_loss = F.cross_entropy(logits, targets)
            kl = None
            if teacher is not None and kl_rows is None:
                kl = kl_to_teacher(logits, teacher.logits(), self.config.kl_mix)
            elif teacher is not None:
                kl = (kl_to_teacher(logits[kl_rows], teacher.logits(kl_rows), self.config.kl_mix) if kl_rows.any()
                      else logits.new_zeros(()))
            return token_loss, kl, logits.detach().argmax(-1), logits
        head = self.base.get_output_embeddings()
        grad = torch.is_grad_enabled() and (hidden.requires_grad or any(p.requires_grad for p in head.parameters()))
        n, ce, kl, predictions = hidden.shape[0], [], [], []
        for start in range(0, n, chunk):
            part = (head, hidden[start:start + chunk], targets[start:start + chunk], teacher,
                    None if kl_rows is None else kl_rows[start:start + chunk], start, self.config.kl_mix,
                    self.final_logits)
            if grad:
                sums = checkpoint(_chunk_losses, *part, use_reentrant=False, preserve_rng_state=False)
            else:
                sums = _chunk_losses(*part)
            ce.append(sums[0])
            kl.append(sums[1])
            predictions.append(sums[2])
        token_loss = torch.stack(ce).sum() / n
        if teacher is None:
            return token_loss, None, torch.cat(predictions), None
        count = n if kl_rows is None else kl_rows.sum().clamp(min=1)
        return token_loss, torch.stack(kl).sum() / count, torch.cat(predictions), None

    def unmerged_inputs(self, batch: TrainBatch | PackedBatch) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """(ids, positions, mask) of the ordinary, unmerged [prompt, response] sequences, right-padded."""
        packed = as_packed(batch, self.config.max_steps, self.device)
        ids = packed.ids
        positions = torch.arange(ids.shape[1], device=ids.device)[None].expand(ids.shape[0], -1)
        return ids, positions, self.by_layer_type(slot_mask(packed.ids_valid), positions)

    @torch.no_grad()
    def teacher_states(self, batch: TrainBatch | PackedBatch, prompt: PromptStates | None = None) -> TeacherStates:
        """The unmerged base's final hidden states at every response token (TrainOutput order) and its LM head;
        with ``prompt`` (`prompt_states`) it runs the response tokens only, after the prompts' cached states."""
        packed = as_packed(batch, self.config.max_steps, self.device)
        ids, positions, mask = self.unmerged_inputs(packed)
        head = self.base.get_output_embeddings()
        with self._recording(self.hidden_weight > 0) as rec:
            if prompt is not None:
                final, _ = self.after_prompt(prompt, self.embed(ids), positions, packed.unmerged_tail)
                at = prompt.joined(packed.response_at)
            else:
                self._taps = None
                final = self._training_stack()(input_ids=ids, position_ids=positions,
                                               attention_mask=self.readable(mask), use_cache=False).last_hidden_state
                at = packed.response_at
        layers = rec["states"]
        if layers is not None:
            layers = (layers if prompt is None else prompt.padded(layers))[at]
        return TeacherStates(final[at], head, layers=layers, final=self.final_logits)

    # ----------------------------------------------------------------- prompts computed once
    def prompt_trains(self) -> bool:
        """Whether a trained weight acts on a prompt slot. Prompt tokens are single-token inputs, embedded by the
        base (never the embedder), and a scoped LoRA's adapters are off there (`adapter_gate`): so only trainable
        base weights other than scoped adapters make the prompts' states depend on what trains."""
        scoped = self.config.lora_scope != "all"
        return any(p.requires_grad and not (scoped and is_adapter_weight(name))
                   for name, p in self.base.named_parameters())

    @torch.no_grad()
    def prompt_states(self, batch: TrainBatch | PackedBatch) -> PromptStates:
        """The unadapted base over every row's prompt, once (`PromptStates`)."""
        packed = as_packed(batch, self.config.max_steps, self.device)
        lengths = packed.prompt_lengths
        width = max(len(p) for p in packed.batch.prompt_ids)
        ids = packed.ids[:, :width]
        valid = torch.arange(width, device=ids.device)[None] < lengths[:, None]
        positions = torch.arange(width, device=ids.device)[None].expand(ids.shape[0], -1)
        cache = DynamicCache()
        with adapters_disabled(self.base):
            mask = self.by_layer_type(slot_mask(valid), positions)
            final, features = self.base_forward(self.embed(ids), positions, mask, cache=cache, training=True)
        return PromptStates(final, features, [(layer.keys, layer.values) for layer in cache.layers], lengths)

    def after_prompt(self, prompt: PromptStates, inputs_embeds: torch.Tensor, positions: torch.Tensor,
                     tail: tuple[torch.Tensor, torch.Tensor], merged_slots: torch.Tensor | None = None,
                     lifetime: torch.Tensor | None = None):
        """The base over the slots ``tail`` (`tail_index`) of a layout whose rows start with their prompts, reading
        the prompts' cached keys and values -> (final, features) in the joined layout (`PromptStates.joined`).
        ``lifetime``: the layout's slot lifetimes (`slot_mask`), or None."""
        cols, valid = tail
        if cols.shape[1] == 0:  # every row is its prompt and one group: nothing runs after the prompts
            return prompt.final, prompt.features
        rows = torch.arange(cols.shape[0], device=cols.device)[:, None]
        if lifetime is not None:  # (prompt slots stay; a row's slots keep their distances, so their lifetimes hold)
            lifetime = torch.cat([torch.full_like(prompt.valid, FOREVER, dtype=torch.long), lifetime[rows, cols]], 1)
        mask = slot_mask(torch.cat([prompt.valid, valid], 1), prompt.final.shape[1], lifetime=lifetime)
        queries = positions[rows, cols]
        prompt_positions = torch.arange(prompt.final.shape[1], device=queries.device)[None].expand(len(queries), -1)
        mask = self.by_layer_type(mask, queries, torch.cat([prompt_positions, queries], 1))
        merged = None if merged_slots is None else merged_slots[rows, cols] & valid
        final, features = self.base_forward(inputs_embeds[rows, cols], queries, mask,
                                            cache=prompt.cache(), merged_slots=merged, training=True)
        return torch.cat([prompt.final, final], 1), torch.cat([prompt.features, features], 1)

    def teacher_logits(self, batch: TrainBatch | PackedBatch) -> torch.Tensor:
        """The unmerged base model's logits for every response token, in TrainOutput order [T, V]."""
        return self.teacher_states(batch).logits()


def context_places(at: tuple[torch.Tensor, torch.Tensor], width: int) -> tuple[torch.Tensor, torch.Tensor]:
    """The ``width`` slots before each place ``at`` (rows [G], cols [G]), oldest first -> (rows, cols) [G, width];
    a column before the row's first slot is its first slot."""
    rows, cols = at
    back = torch.arange(width, 0, -1, device=cols.device)
    return rows[:, None].expand(-1, width), (cols[:, None] - back).clamp(min=0)


def reading_pairs(groups: list[list[int]], single_tail: int = 0) -> tuple[list[int], list[int]]:
    """The places where a merge's reading shows: (group index, index of its first token), over every row's groups in
    order, of each group whose slot before it is a single token with a merged slot earlier in its row (the groups'
    inputs as `packing.input_sizes` lays them out with ``single_tail``).

    That slot is the same input as the unmerged sequence's token there, so its state should be the unmerged
    base's state at that token, at every layer: only the merged history before it can make them differ."""
    group_at, token_at, g, t = [], [], 0, 0
    for sizes in groups:
        merged_before = False
        for j, n in enumerate(sizes):
            if j >= 1:
                inputs = input_sizes(sizes[j - 1], single_tail)
                merged_before = merged_before or max(inputs) > 1
                if inputs[-1] == 1 and merged_before:
                    group_at.append(g)
                    token_at.append(t)
            g, t = g + 1, t + n
    return group_at, token_at


def hidden_match_loss(states: torch.Tensor, teacher_layers: torch.Tensor, groups: list[list[int]],
                      single_tail: int = 0) -> torch.Tensor:
    """Mean over `reading_pairs` and layers of 1 - cos(model state, unmerged base state).

    states [G, L, d]: the model's layer outputs at the slot before each group; teacher_layers [T, L, d]: the unmerged
    base's at the token before each response token (TrainOutput order); groups: every row's group sizes. Cosine
    makes it blind to the residual stream's growth with depth. 0 (with a gradient path) where no pair exists."""
    group_at, token_at = reading_pairs(groups, single_tail)
    if not group_at:
        return states.sum() * 0.0
    device = states.device
    student = states[torch.tensor(group_at, device=device)].float()
    teacher = teacher_layers[torch.tensor(token_at, device=device)].float()
    return (1 - F.cosine_similarity(student, teacher, dim=-1)).mean()


def kl_to_teacher(logits: torch.Tensor, teacher_logits: torch.Tensor, mix: float = 0.0) -> torch.Tensor:
    """Mean over tokens of the KL term, both given as logits [T, V]: KL(teacher || model), with ``mix`` > 0
    (1 - mix) x that + mix x KL(model || teacher) (`divergence`)."""
    return divergence(F.log_softmax(logits.float(), -1), F.log_softmax(teacher_logits.float(), -1), mix) / max(
        logits.shape[0], 1)


def divergence(student: torch.Tensor, teacher: torch.Tensor, mix: float) -> torch.Tensor:
    """Summed over rows of log-probabilities [T, V]: (1 - mix) x KL(teacher || student) + mix x KL(student ||
    teacher). The forward KL covers the teacher's mass (what greedy reading needs); the reverse KL keeps the student's
    mass off tokens the teacher finds unlikely (what a sampled token costs the teacher)."""
    out = F.kl_div(student, teacher, log_target=True, reduction="sum") if mix < 1 else student.new_zeros(())
    if mix > 0:
        out = (1 - mix) * out + mix * F.kl_div(teacher, student, log_target=True, reduction="sum")
    return out


def _chunk_losses(head: nn.Module, hidden: torch.Tensor, targets: torch.Tensor, teacher: TeacherStates | None,
                  kl_rows: torch.Tensor | None, start: int, mix: float = 0.0, final: FinalLogits = FinalLogits()):
    """One chunk of `HamburgerModel.token_losses`: (summed cross-entropy, summed KL or None, argmax predictions)."""
    logits = final(head(hidden)).float()
    ce = F.cross_entropy(logits, targets, reduction="sum")
    predictions = logits.detach().argmax(-1)
    if teacher is None:
        return ce, None, predictions
    rows = slice(start, start + hidden.shape[0])
    if kl_rows is not None:
        rows = torch.arange(rows.start, rows.stop, device=hidden.device)[kl_rows]
        logits = logits[kl_rows]
    teacher_logp = F.log_softmax(teacher.logits(rows), -1)
    return ce, divergence(F.log_softmax(logits, -1), teacher_logp, mix), predictions
