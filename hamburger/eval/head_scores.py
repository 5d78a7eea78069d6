"""Choosing a base's full heads: which key/value heads most need the history a fold takes out.

Teacher-forced, on answers (a distill or segment file, e.g. the model's own sampled answers to training prompts): each
answer runs through the unchanged base (adapters off) in one forward whose mask gives every position what it would
see decoding with ``folding``. The fold is replayed token by token by the engine's own `FoldState` on the base's
full-history distributions, so a position sees an earlier answer token only while it would be in the cache (in one
causal forward each slot's keys and values come from what its own position saw: the decode's cache). Then the same
forward once per (layer, key/value head) with that head alone reading the whole history (`full_heads.head_channels`).
Per answer position after the first fold: KL(the base with its whole cache || the folded reading). A head's score is
the KL it takes away, averaged per answer and over answers; ``tail_kl_gain`` is the same over each answer's
`TAIL` share of positions where the folded reading is furthest from the base's (where the worst tokens sit).
`choose` takes the best-scored heads; `save_full_heads` writes them into a checkpoint's config, where verify_fold
reads them (`engine/full_heads.py`). Cost: one forward per head and answer (90 heads x 20 answers of ~400 tokens:
29 minutes on a 2-core CPU for a 135M base, partly beside other work: experiments/2026-11-28-full-head-cache/).
"""

from __future__ import annotations

import json
import sys
from dataclasses import asdict, dataclass
from pathlib import Path

import torch
from transformers import DynamicCache

from hamburger.core.checkpoint import read_meta, write_meta
from hamburger.core.config import check_full_heads
from hamburger.core.lora import adapters_disabled
from hamburger.data.io import read_jsonl
from hamburger.engine.folding import Folding, FoldState
from hamburger.engine.full_heads import head_channels
from hamburger.engine.prompt import encode_prompt
from hamburger.errors import HamburgerError

TAIL = 0.05  # the share of an answer's positions after its first fold that make its tail


@dataclass
class HeadScore:
    layer: int
    kv_head: int
    kl_gain: float  # mean KL per position after the first fold that this head's whole history takes away
    tail_kl_gain: float  # ... over each answer's tail (`TAIL`)


def fold_visibility(prompt_len: int, answer: list[int], logits: torch.Tensor, folding: Folding) -> torch.Tensor:
    """[2, T, T] boolean: channel 0 what each position of prompt + answer sees decoding with ``folding`` (one answer
    token per forward, the fold's cut on ``logits`` [A, V], the distributions that chose the answer), channel 1 the
    causal mask (every earlier position)."""
    state = FoldState(folding, logits.shape[-1])
    gone = [len(answer)] * len(answer)  # the first answer index whose query no longer sees token j
    state.chose(logits[:1], answer[:1])
    for a in range(len(answer)):
        for start, end in state.due(a):  # (before the forward that feeds token a)
            for j in state.leaving(start, end):
                gone[j] = a
        if a + 1 < len(answer):
            state.chose(logits[a + 1:a + 2], answer[a + 1:a + 2])
        state.fed(a, a + 1)
    total = prompt_len + len(answer)
    causal = torch.ones(total, total, dtype=torch.bool).tril()
    folded = causal.clone()
    index = torch.arange(len(answer))
    folded[prompt_len:, prompt_len:] &= ~(torch.tensor(gone)[None, :] <= index[:, None])
    return torch.stack([folded, causal])


def _answers(path: str | Path, tokenizer, limit: int, min_tokens: int) -> list[tuple[list[int], list[int]]]:
    """The first ``limit`` (prompt ids, answer ids) of a distill file (``prompt``, ``response_token_ids``) or a
    segment file (``prompt_ids``, ``response_ids``) whose answers hold at least ``min_tokens`` tokens."""
    out = []
    for row in read_jsonl(path):
        answer = row.get("response_ids", row.get("response_token_ids"))
        if answer is None or ("prompt_ids" not in row and "prompt" not in row):
            raise HamburgerError(f"{path}: rows need prompt (or prompt_ids) and response_token_ids (or response_ids)")
        answer = json.loads(answer) if isinstance(answer, str) else answer
        if len(answer) >= min_tokens:
            prompt = row["prompt_ids"] if "prompt_ids" in row else encode_prompt(tokenizer, row["prompt"])
            out.append((prompt, answer))
        if len(out) == limit:
            break
    return out


def score_heads(model, tokenizer, answers_file: str | Path, folding: Folding, limit: int = 20,
                min_tokens: int = 160, progress: bool = True) -> tuple[dict, list[HeadScore]]:
    """(the folded reading's mean KL and tail KL over the answers, every head's `HeadScore`, best first) on the first
    ``limit`` answers of ``answers_file`` with at least ``min_tokens`` tokens (see the module's doc)."""
    lean = model._lean_stack()
    if lean is None:
        raise HamburgerError("scoring heads needs the lean stack (a base whose layers `core/lean.py` runs)")
    config = model.base.config
    units = [(layer, g) for layer in range(config.num_hidden_layers) for g in range(config.num_key_value_heads)]
    rows = _answers(answers_file, tokenizer, limit, min_tokens)
    if not rows:
        raise HamburgerError(f"{answers_file}: no answer of at least {min_tokens} tokens to score heads on")
    gains: dict[tuple[int, int], list[tuple[float, float]]] = {u: [] for u in units}
    folded_kl, folded_tail = [], []

    def log_probs(ids: torch.Tensor, mask: torch.Tensor, at: slice) -> torch.Tensor:
        positions = torch.arange(ids.shape[1], device=model.device)[None]
        final, _ = lean(model.embed(ids), positions, mask[None].to(model.device), DynamicCache(), taps=())
        return model.decode_logits(final[0, at]).float().log_softmax(-1)

    def kl(p: torch.Tensor, q: torch.Tensor) -> torch.Tensor:
        return (p.exp() * (p - q)).sum(-1)

    from tqdm import tqdm

    with torch.inference_mode(), adapters_disabled(model.base):
        for prompt, answer in tqdm(rows, unit="answer", file=sys.stderr, disable=not progress):
            ids = torch.tensor([prompt + answer], device=model.device)
            causal = torch.ones(1, ids.shape[1], ids.shape[1], dtype=torch.bool).tril()  # (one channel: every head)
            full = log_probs(ids, causal, slice(len(prompt) - 1, -1))  # [A, V]: the distributions of the answer
            mask = fold_visibility(len(prompt), answer, full, folding)
            folded_rows = (~mask[0, len(prompt):, len(prompt):] & mask[1, len(prompt):, len(prompt):]).any(1)
            if not folded_rows.any():
                continue  # (never folds)
            first = int(folded_rows.nonzero()[0])  # the first answer token whose position no longer sees one
            at = slice(len(prompt) + first, len(prompt) + len(answer) - 1)  # its position on, predicting the next
            reference = full[first + 1:]  # (full's row i predicts answer token i)
            base_kl = kl(reference, log_probs(ids, mask[:1], at))  # (every head reads the fold)
            tail = base_kl.topk(max(1, int(TAIL * len(base_kl)))).indices
            folded_kl.append(base_kl.mean().item())
            folded_tail.append(base_kl[tail].mean().item())
            for unit in units:
                with head_channels(lean, [unit], config):
                    got = kl(reference, log_probs(ids, mask, at))
                gains[unit].append(((base_kl - got).mean().item(), (base_kl[tail] - got[tail]).mean().item()))
    if not folded_kl:
        raise HamburgerError(f"{answers_file}: no answer folds under this fold; nothing to score")
    mean = lambda xs: sum(xs) / len(xs)  # noqa: E731
    scores = [HeadScore(layer, g, mean([a for a, _ in gains[(layer, g)]]), mean([b for _, b in gains[(layer, g)]]))
              for layer, g in units]
    scores.sort(key=lambda s: -s.kl_gain)
    return {"folded_kl": mean(folded_kl), "folded_tail_kl": mean(folded_tail), "answers": len(folded_kl)}, scores


def choose(scores: list[HeadScore], count: int) -> list[tuple[int, int]]:
    """The ``count`` best-scored heads (by ``kl_gain``), as (layer, key/value head) pairs."""
    if count < 0:
        raise HamburgerError(f"the number of full heads must be >= 0, got {count}")
    return sorted((s.layer, s.kv_head) for s in sorted(scores, key=lambda s: -s.kl_gain)[:count])


def save_full_heads(checkpoint: str | Path, heads: list[tuple[int, int]], base_config, record: dict) -> Path:
    """Write ``heads`` as the checkpoint's `HamburgerConfig.full_heads` (checked against the base; atomic), with
    ``record`` (how they were chosen) beside it as ``full_heads_scoring``."""
    meta = read_meta(checkpoint)
    meta["config"]["full_heads"] = [list(h) for h in check_full_heads(heads, base_config)]
    meta["full_heads_scoring"] = record
    return write_meta(checkpoint, meta)


def score_rows(summary: dict, scores: list[HeadScore]) -> list[dict]:
    """The scores as JSON rows: the summary first, then every head, best first."""
    return [summary] + [asdict(s) for s in scores]
