"""What a request's own text and its bias do to the logits its tokens are chosen from (`DecodingConfig`), in this order
(transformers' and vLLM's):

- ``logit_bias``: a number added to a token's logit (-100 all but bans it, 100 all but forces it);
  ``allowed_token_ids`` (vLLM's) adds -inf to every other id's, which bans them;
- ``repetition_penalty`` r (CTRL's, as transformers' and vLLM's): the logit of a token that the prompt or the answer so
  far holds is divided by r where it is positive and multiplied by r elsewhere (r > 1 discourages repeats);
- ``presence_penalty`` p and ``frequency_penalty`` f (OpenAI's): a token the answer holds c > 0 times loses p + c f
  (the prompt does not count);
- ``min_tokens`` m (vLLM's): while the answer holds fewer than m tokens, no id that would end it can be chosen.

They change which token is chosen, in every mode and for every token (a group's first, from the base, and its later
ones, from the micro-step decoder; in the verify modes the base's test of each draft: the answer follows the base's
adjusted distribution). They do not change what the model is said to think: the reported probabilities
(`token_probs`, `top_logprobs`) and the knob's tests read the unadjusted logits, as vLLM reports raw log-probabilities.

A row's state (`Penalties`) is one of its `sampling.Adjust`s, dense over the vocabulary, on the model's device: its answer's count of each token and
whether its prompt holds it, so the device micro loop adjusts a whole micro batch without a host sync (`stack`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch

from hamburger.errors import HamburgerError


def penalize(logits: torch.Tensor, counts: torch.Tensor, in_prompt: torch.Tensor | None, presence, frequency,
             repetition, bias: torch.Tensor | None, min_tokens=0, ends: torch.Tensor | None = None) -> torch.Tensor:
    """``logits`` [..., V] adjusted (float32): ``counts`` [..., V] the answer's count of each token, ``in_prompt``
    [..., V] whether the prompt holds it (None: no repetition penalty), ``presence``, ``frequency``, ``repetition``
    and ``min_tokens`` numbers or tensors [..., 1], ``bias`` [..., V] or None, ``ends`` [..., V] the ids that would
    end the answer (None: no `min_tokens`). Neutral settings (0, 0, 1, zeros, 0) return the logits' values exactly."""
    out = logits.float() if bias is None else logits.float() + bias
    if in_prompt is not None:
        seen = in_prompt | (counts > 0)
        out = torch.where(seen, torch.where(out > 0, out / repetition, out * repetition), out)
    out = out - frequency * counts - presence * (counts > 0).float()
    if ends is not None:  # (the answer's length is its tokens' count)
        out = out.masked_fill(ends & (counts.sum(-1, keepdim=True) < min_tokens), -math.inf)
    return out


class Penalties:
    """One row's adjustment: its settings, the count of each token in its answer so far and (with a repetition
    penalty) the tokens of its prompt, as dense [V] tensors on ``device``. `add` each token the row takes."""

    def __init__(self, presence: float, frequency: float, repetition: float, logit_bias: dict[int, float],
                 prompt_ids: list[int], vocab: int, device: torch.device, min_tokens: int = 0,
                 ends: list[int] = (), allowed: list[int] | None = None):
        if any(not 0 <= t < vocab for t in logit_bias):
            raise HamburgerError(f"logit_bias names token ids outside the vocabulary [0, {vocab}): "
                                 f"{sorted(t for t in logit_bias if not 0 <= t < vocab)[:5]}")
        self.presence, self.frequency, self.repetition, self.min_tokens = presence, frequency, repetition, min_tokens
        self.ends = None  # (``ends``, the ids that would end the answer, as a [V] mask, with a `min_tokens`)
        if min_tokens and ends:
            self.ends = torch.zeros(vocab, dtype=torch.bool, device=device)
            self.ends[torch.tensor(list(ends), device=device)] = True
        self.counts = torch.zeros(vocab, device=device)
        self.in_prompt = None
        if repetition != 1.0:
            self.in_prompt = torch.zeros(vocab, dtype=torch.bool, device=device)
            self.in_prompt[torch.tensor(prompt_ids, device=device)] = True
        self.bias = None  # (``logit_bias``, with -inf for each id ``allowed`` leaves out)
        if logit_bias or allowed is not None:
            self.bias = torch.zeros(vocab, device=device)
        if logit_bias:
            ids = torch.tensor(list(logit_bias), device=device)
            self.bias.index_put_((ids,), torch.tensor(list(logit_bias.values()), dtype=torch.float32, device=device))
        if allowed is not None:
            banned = torch.ones(vocab, dtype=torch.bool, device=device)
            banned[torch.tensor(allowed, device=device)] = False
            self.bias.masked_fill_(banned, -math.inf)

    @classmethod
    def of(cls, cfg, prompt_ids: list[int], vocab: int, device: torch.device, ends: list[int] = ()
           ) -> Penalties | None:
        """A row's penalties under its `DecodingConfig` (``ends``: the ids that would end it, which its `min_tokens`
        holds back: `DecodingConfig.ends`), or None when it asks for none."""
        if not cfg.penalized:
            return None
        return cls(cfg.presence_penalty, cfg.frequency_penalty, cfg.repetition_penalty, cfg.logit_bias, prompt_ids,
                   vocab, device, cfg.min_tokens, ends, cfg.allowed_token_ids)

    def add(self, token: int) -> None:
        self.counts[token] += 1

    def __call__(self, logits: torch.Tensor, after: list[int] = ()) -> torch.Tensor:
        """One position's logits [V] adjusted, as if the answer also held the tokens ``after`` (drafts before it)."""
        counts = self.counts
        if after:
            counts = counts.index_add(0, torch.tensor(after, device=counts.device),
                                      torch.ones(len(after), device=counts.device))
        return penalize(logits, counts, self.in_prompt, self.presence, self.frequency, self.repetition, self.bias,
                        self.min_tokens, self.ends)


@dataclass
class PenaltyBatch:
    """A micro batch's penalties as [B, V] and [B, 1] tensors (`stack`), for the device micro loop: rows without any
    take neutral values, which leave their logits exactly as they are."""

    counts: torch.Tensor
    in_prompt: torch.Tensor | None
    presence: torch.Tensor
    frequency: torch.Tensor
    repetition: torch.Tensor
    bias: torch.Tensor | None
    min_tokens: torch.Tensor
    ends: torch.Tensor | None

    @classmethod
    def stack(cls, penalties: list[Penalties | None], vocab: int, device: torch.device) -> PenaltyBatch | None:
        """None when no row has penalties."""
        if all(p is None for p in penalties):
            return None
        zeros = torch.zeros(vocab, device=device)
        rows = [p for p in penalties if p is not None]

        def scalar(name: str, neutral: float) -> torch.Tensor:
            return torch.tensor([[neutral if p is None else getattr(p, name)] for p in penalties], device=device)
        none = torch.zeros(vocab, dtype=torch.bool, device=device)
        in_prompt = ends = None
        if any(p.in_prompt is not None for p in rows):
            in_prompt = torch.stack([none if p is None or p.in_prompt is None else p.in_prompt for p in penalties])
        if any(p.ends is not None for p in rows):
            ends = torch.stack([none if p is None or p.ends is None else p.ends for p in penalties])
        bias = None
        if any(p.bias is not None for p in rows):
            bias = torch.stack([zeros if p is None or p.bias is None else p.bias for p in penalties])
        return cls(torch.stack([zeros if p is None else p.counts for p in penalties]), in_prompt,
                   scalar("presence", 0.0), scalar("frequency", 0.0), scalar("repetition", 1.0), bias,
                   scalar("min_tokens", 0), ends)

    def adjust(self, logits: torch.Tensor, counts: torch.Tensor) -> torch.Tensor:
        """The logits [B, V] adjusted with the answers' counts ``counts`` [B, V] (``counts`` as the micro steps grow
        them, out of place: `counted`)."""
        return penalize(logits, counts, self.in_prompt, self.presence, self.frequency, self.repetition, self.bias,
                        self.min_tokens, self.ends)


def counted(counts: torch.Tensor, tokens: torch.Tensor) -> torch.Tensor:
    """``counts`` [B, V] with each row's new token [B] counted (a new tensor)."""
    return counts.scatter_add(1, tokens[:, None], torch.ones_like(tokens[:, None], dtype=counts.dtype))
