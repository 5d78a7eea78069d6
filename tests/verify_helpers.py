"""Tiny models that draft and fold, and the folded layouts' specification: what the verify and verify_fold tests share,
and `engine_of`, a batch of any of the four engines (plain helpers; fixtures live in tests/conftest.py)."""

import math

import torch
from transformers import DynamicCache

from hamburger.core.model import HamburgerModel
from hamburger.core.packing import group_tensors
from hamburger.data.segment import SegmentSettings, log_softmax_entropy
from hamburger.engine.folding import Folding, FoldState
from hamburger.engine.full_heads import head_channels
from tests.helpers import adapted, tiny_hamburger, tiny_long_group_model

ENGINES = ["host", "device", "verify", "verify_fold"]  # hamburger mode's two micro loops, and the two verify modes


def drafting_model(family: str, init: str = "copy_last", seed: int = 3) -> HamburgerModel:
    """A tiny model whose stop head says "go on" (drafts happen); ``random`` init makes many drafts wrong."""
    model = tiny_hamburger(family, seed=seed, decoder_init=init)
    with torch.no_grad():
        model.stop_head.net[2].bias.fill_(-3.0)
    return model


def engine_model(kind: str) -> HamburgerModel:
    """The model `engine_of` runs the engine ``kind`` on: its groups (hamburger mode) or drafts (verify) hold several
    tokens."""
    return tiny_long_group_model() if kind in ("host", "device") else drafting_model("llama")


def engine_of(kind: str, tokenizer, prompts: list[list[int]], configs, model: HamburgerModel | None = None, **kw):
    """A batch of the engine ``kind`` (`ENGINES`) over ``model`` (default: a new `engine_model`); ``kw``: the
    engine's options (e.g. `trace_logits`, `prefill_chunk`)."""
    from hamburger.engine.folding import DEFAULT_FOLD, parse_folding
    from hamburger.engine.generate import Generation
    from hamburger.engine.verify import VerifyGeneration

    model = model or engine_model(kind)
    if kind in ("host", "device"):
        return Generation(model, tokenizer, prompts, configs, micro_loop=kind, **kw)
    fold = parse_folding(DEFAULT_FOLD) if kind == "verify_fold" else None
    return VerifyGeneration(model, tokenizer, prompts, configs, fold=fold, **kw)


def fed_groups(res) -> list[int]:
    """Tokens each verify forward kept in the cache: the pending token and the drafts the base kept."""
    return [1 + a for a in res.accepted]


def fold_schedule(folding: Folding, vocab: int, logits: torch.Tensor, fed: list[int],
                  offtop: frozenset[int] = frozenset()) -> list[list[tuple[int, int]]]:
    """The groups folded before each forward, by the policy (`FoldState`) on the traced logits' entropies (and the
    answer tokens ``offtop`` that stay in their slots)."""
    state = FoldState(folding, vocab)
    state.entropies = log_softmax_entropy(logits)[1].tolist()
    state.offtop = set(offtop)
    out, done = [], 0
    for n in fed:
        out.append(state.due(done))
        state.fed(done, done + n)
        done += n
    return out


def folded_reference_logits(model, prompt: list[int], answer: list[int], fed: list[int],
                            schedule: list[list[tuple[int, int]]], keep: str = "merged",
                            stay: frozenset[int] = frozenset(), full: tuple = ()) -> torch.Tensor:
    """The specification, one uncached forward: the slots in the order the engine feeds them (the prompt; then per
    forward s, the merged slots of the groups `schedule[s]` folds, then the tokens forward s kept, as single slots).
    A slot sees the earlier slots still in the cache when it is fed: a folded group's single slots leave it at the
    forward that feeds its merged slot (keep ``last``/``first``: all but that token's leave then, and no merged slot is
    fed; the answer tokens ``stay`` never leave). The (layer, key/value head) pairs ``full`` see every earlier slot
    (`engine/full_heads.py`). Returns the logits of every answer token, from the slot before it."""
    pieces, positions, born, dies = [], [], [], []

    def add(tokens: list[int], position: int, step: int) -> int:
        pieces.append(tokens)
        positions.append(position)
        born.append(step)
        dies.append(math.inf)
        return len(pieces) - 1

    slot_of = [add([t], i, 0) for i, t in enumerate(prompt)]  # the slot each fed token sits in (prompt, then answer)
    done = 0
    for s, (n, groups) in enumerate(zip(fed, schedule), start=1):
        for start, end in groups:
            for i in set(range(start + (keep == "first"), end - (keep == "last"))) - stay:  # (none: every token)
                dies[slot_of[len(prompt) + i]] = s
            if keep == "merged":
                add(answer[start:end], len(prompt) + end - 1, s)
        for i in range(done, done + n):
            slot_of.append(add([answer[i]], len(prompt) + i, s))
        done += n
    n = len(pieces)
    sees = torch.tensor([[k <= q and dies[k] > born[q] for k in range(n)] for q in range(n)])
    tokens, sizes = group_tensors(pieces, model.config.max_steps)
    embeds = model.embedder(model.embed(tokens), sizes)[None]
    gate_from = sizes > 1
    first = next((s for s, groups in enumerate(schedule, start=1) if groups), None)
    if model.config.reads_fold_history and first is not None:  # every slot fed from the first fold on
        gate_from = gate_from | (torch.tensor(born) == first)
    with torch.no_grad():
        # (with a sliding window, its layers see keys less than a window of positions back: `masks.by_layer_type`)
        if full:  # (through the lean stack, on an empty cache, each head reading its channel)
            mask = torch.stack([sees, torch.ones(n, n, dtype=torch.bool).tril()])[None]
            with head_channels(model._lean_stack(), full, model.base.config):
                final, _ = model.base_forward(embeds, torch.tensor([positions]),
                                              model.by_layer_type(mask, torch.tensor([positions])), DynamicCache(),
                                              merged_slots=gate_from[None])
        else:
            final, _ = model.base_forward(embeds, torch.tensor([positions]),
                                          model.by_layer_type(sees[None, None], torch.tensor([positions])),
                                          merged_slots=gate_from[None])
        logits = model.decode_logits(final[0], max_rows=n).float()
    return logits[[slot_of[len(prompt) - 1 + j] for j in range(len(answer))]]


FOLDINGS = {"forwards 0": Folding(window=0, groups="forwards"), "forwards 5": Folding(window=5, groups="forwards"),
            "segments 0": Folding(window=0, segments=SegmentSettings(strategy="decreasing", ratio=1.03)),
            "segments 6": Folding(window=6, segments=SegmentSettings(strategy="decreasing", ratio=1.02, max_steps=3)),
            "forwards 2, growing": Folding(window=2, share=0.4, groups="forwards"),
            "segments 6, keep last": Folding(window=6, keep="last",
                                             segments=SegmentSettings(strategy="decreasing", ratio=1.02, max_steps=3)),
            "forwards 0, keep last": Folding(window=0, groups="forwards", keep="last"),
            "segments 2, keep first": Folding(window=2, keep="first",  # (groups beyond the embedder's 4 tokens)
                                              segments=SegmentSettings(strategy="decreasing", ratio=1.03, max_steps=6)),
            "segments 2, keep none": Folding(window=2, keep="none",
                                             segments=SegmentSettings(strategy="decreasing", ratio=1.03)),
            "segments 2, KV budget": Folding(window=2, kv=0.7,
                                             segments=SegmentSettings(strategy="decreasing", ratio=1.03))}


def folding_model(family: str = "llama", scope: str | None = None):
    """`drafting_model` with a sharper LM head: the tiny base's entropies then vary enough to cut groups of 1-4.
    ``scope``: with non-zero base adapters of that `lora_scope` (as many sets as it uses)."""
    model = drafting_model(family)
    if scope:
        model.config.lora_scope = scope
        adapted(model, std=0.2)
    with torch.no_grad():
        model.base.get_output_embeddings().weight.mul_(4.0)
    return model
