"""Decoding settings and token choice: greedy, or temperature / top-k / top-p sampling with a seed."""

from __future__ import annotations

import math
from dataclasses import dataclass, field, replace
from typing import Protocol, Sequence

import torch

from hamburger.core.config import check_confidence
from hamburger.errors import HamburgerError

MAX_TOP_LOGPROBS = 20  # the most alternatives a token keeps (OpenAI's limit)
MAX_PENALTY = 2.0  # presence and frequency penalties lie in [-2, 2] (OpenAI's range)
MAX_BIAS = 100.0  # a logit bias lies in [-100, 100] (OpenAI's range)


@dataclass
class DecodingConfig:
    """Settings of one generation request (named apart from transformers' `GenerationConfig`, a different class).

    confidence: the HAMburger knob in (0, 1]. After each token the stop head gives p_stop; the group
        goes on while 1 - p_stop >= confidence (and it has fewer than max_steps tokens); with the model's
        `gate` "token_prob" a micro token joins instead while the MSD's probability of it is >= confidence.
        Higher is closer to the base model; 1.0 makes every group one token (plain decoding). None uses the
        model's default. The stop decision is this deterministic threshold also when sampling: with the
        stop_head gate sampling changes which tokens are drawn, never how many per base forward; with
        token_prob the drawn token's probability (under the MSD's unwarped distribution) is compared.
    temperature: 0 is greedy. top_p in (0, 1], top_k >= 0 (0 = off; vLLM's -1 is taken as 0) and min_p in [0, 1]
        (0 = off: a token stays only where its probability is at least min_p times the most likely one's) apply when
        sampling.
    seed: seeds a generator private to the request, so a seeded request is reproducible.
    stop: strings that end the output; the text is cut before the first occurrence.
    include_stop_str_in_output: cut the text after that stop string instead, so it ends with it (vLLM's); likewise the
        text of the id that ended the answer (an end-of-sequence or stop token id) is in it only with this.
    skip_special_tokens: leave the tokenizer's special tokens out of the text (vLLM's; the default).
    ignore_eos: keep generating past end-of-sequence ids (fixed-length benchmarks).
    stop_token_ids: token ids that end the answer as an end-of-sequence id does (vLLM's; `ignore_eos` leaves them on).
    min_tokens: none of the ids that would end the answer is chosen before it holds this many tokens, and a stop string
        ends it only where it ends past their text (vLLM's; 0 = off; at most max_new_tokens).
    allowed_token_ids: None (default), or the only ids any token of the answer can be (vLLM's): every other id's logit
        is -inf. The model's end-of-sequence ids are not added: leave them out and the answer runs to its length.
    bad_words: words the answer may not hold, as the tokenizer usually spells them (vLLM's; `engine/bad_words.py`).
    reread: re-read on doubt, in [0, 1]. After a merged group (2+ tokens in one slot), if the model's most likely
        next token has probability below ``reread`` (its unwarped distribution), the group is read again as one
        slot per token: its merged slot leaves the KV cache, one more base forward writes its tokens, and the next
        group starts from that reading. It costs a forward and the group's KV saving, and fixes the tokens that
        read a merged slot wrongly where the model doubts them. 0 = never (default); 1 = every merged group (then
        every group's first token reads unmerged history). Verify mode has no merged slots and ignores it.
    prompt_logprobs: None (default), or keep each prompt token's log-probability after the tokens before it (the
        first has none) with its ``prompt_logprobs`` most likely alternatives (`GenerationResult.prompt_logprobs`,
        `prompt_alternatives`), under the model's reading of the prompt (one slot per token, as its prefill reads it).
    json_schema: hold the answer to this JSON schema (a dict; `engine/grammar.py`): at each choice the tokens it does not
        allow next are left out, and the answer ends once the schema is complete. None: free text.
    grammar: hold the answer to this grammar instead (a Lark grammar in llguidance's syntax, as text), the same way.
    prediction: token ids of what much of the answer is expected to be (OpenAI's predicted outputs): verify mode drafts
        from it where the answer follows it (`engine/prediction.py`); the answer stays the base's. Other modes ignore it.
    presence_penalty, frequency_penalty (OpenAI's, in [-2, 2]), repetition_penalty (> 0, 1 = off; CTRL's, as
        transformers'), logit_bias ({token id: bias in [-100, 100]}): what the request's own text and its bias do to
        the logits every token is chosen from (`engine/penalties.py`); the reported probabilities stay the model's.
    top_logprobs: for each emitted token, also keep the ``top_logprobs`` most likely tokens with their
        log-probabilities (`GenerationResult.alternatives`, up to `MAX_TOP_LOGPROBS`), under the distribution the token
        was chosen from, before temperature, top-k, top-p and min-p: the base's for a group's first token and in verify
        modes, the micro-step decoder's for a group's later tokens. 0 (default): none are kept.
    """

    max_new_tokens: int = 128
    confidence: float | None = None
    temperature: float = 0.0
    top_p: float = 1.0
    top_k: int = 0
    min_p: float = 0.0
    seed: int | None = None
    stop: list[str] = field(default_factory=list)
    include_stop_str_in_output: bool = False
    skip_special_tokens: bool = True
    ignore_eos: bool = False
    stop_token_ids: list[int] = field(default_factory=list)
    min_tokens: int = 0
    allowed_token_ids: list[int] | None = None
    bad_words: list[str] = field(default_factory=list)
    reread: float = 0.0
    top_logprobs: int = 0
    prompt_logprobs: int | None = None
    presence_penalty: float = 0.0
    frequency_penalty: float = 0.0
    repetition_penalty: float = 1.0
    logit_bias: dict[int, float] = field(default_factory=dict)
    json_schema: dict | None = None
    grammar: str | None = None
    prediction: list[int] | None = None

    def __post_init__(self):
        if self.top_k == -1:  # (vLLM's "off", which clients send as its default)
            self.top_k = 0

    def validate(self) -> "DecodingConfig":
        if not isinstance(self.max_new_tokens, int) or self.max_new_tokens < 1:
            raise HamburgerError(f"max_new_tokens must be a positive integer, got {self.max_new_tokens!r}")
        if self.confidence is not None:
            check_confidence(self.confidence)
        if not (self.temperature >= 0.0 and math.isfinite(self.temperature)):
            raise HamburgerError(f"temperature must be >= 0, got {self.temperature!r}")
        if not 0.0 < self.top_p <= 1.0:
            raise HamburgerError(f"top_p must be in (0, 1], got {self.top_p!r}")
        if self.top_k < 0:
            raise HamburgerError(f"top_k must be >= 0 (0 or -1: off), got {self.top_k!r}")
        if not _number_in(self.min_p, 0.0, 1.0):
            raise HamburgerError(f"min_p must be a number in [0, 1], got {self.min_p!r}")
        if not 0.0 <= self.reread <= 1.0:
            raise HamburgerError(f"reread must be in [0, 1], got {self.reread!r}")
        if any(not s for s in self.stop):
            raise HamburgerError("stop strings must be non-empty")
        for name in ("top_logprobs", "prompt_logprobs"):
            value = getattr(self, name)
            if (name == "top_logprobs" or value is not None) and (
                    isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= MAX_TOP_LOGPROBS):
                raise HamburgerError(f"{name} must be an integer in [0, {MAX_TOP_LOGPROBS}], got {value!r}")
        for name in ("presence_penalty", "frequency_penalty"):
            if not _number_in(getattr(self, name), -MAX_PENALTY, MAX_PENALTY):
                raise HamburgerError(f"{name} must be a number in [-{MAX_PENALTY:g}, {MAX_PENALTY:g}], "
                                     f"got {getattr(self, name)!r}")
        if not _number_in(self.repetition_penalty, 0.0, math.inf) or self.repetition_penalty == 0:
            raise HamburgerError(f"repetition_penalty must be a number > 0 (1 = off), got {self.repetition_penalty!r}")
        if not isinstance(self.logit_bias, dict) or not all(
                isinstance(t, int) and not isinstance(t, bool) and t >= 0 and _number_in(b, -MAX_BIAS, MAX_BIAS)
                for t, b in self.logit_bias.items()):
            raise HamburgerError(f"logit_bias must map token ids (>= 0) to numbers in [-{MAX_BIAS:g}, {MAX_BIAS:g}]")
        if self.json_schema is not None and not isinstance(self.json_schema, dict):
            raise HamburgerError(f"json_schema must be a dict (a JSON object), got {type(self.json_schema).__name__}")
        if self.grammar is not None and (not isinstance(self.grammar, str) or not self.grammar.strip()):
            raise HamburgerError(f"grammar must be a non-empty string (a Lark grammar), got {self.grammar!r}")
        if self.grammar is not None and self.json_schema is not None:
            raise HamburgerError("an answer is held to a JSON schema or to a grammar, not both")
        if isinstance(self.min_tokens, bool) or not isinstance(self.min_tokens, int) or \
                not 0 <= self.min_tokens <= self.max_new_tokens:
            raise HamburgerError(f"min_tokens must be an integer in [0, max_new_tokens {self.max_new_tokens}], got "
                                 f"{self.min_tokens!r}")
        if not isinstance(self.stop_token_ids, list) or not all(
                isinstance(t, int) and not isinstance(t, bool) and t >= 0 for t in self.stop_token_ids):
            raise HamburgerError(f"stop_token_ids must be a list of token ids, got {self.stop_token_ids!r}")
        if self.min_tokens and (self.json_schema is not None or self.grammar is not None):
            raise HamburgerError("min_tokens cannot hold an answer held to a JSON schema or a grammar past its end")
        if self.allowed_token_ids is not None:
            if not isinstance(self.allowed_token_ids, list) or not self.allowed_token_ids or not all(
                    isinstance(t, int) and not isinstance(t, bool) and t >= 0 for t in self.allowed_token_ids):
                raise HamburgerError(f"allowed_token_ids must be a non-empty list of token ids, got "
                                     f"{self.allowed_token_ids!r}")
            if self.json_schema is not None or self.grammar is not None:
                raise HamburgerError("allowed_token_ids cannot go with a JSON schema or a grammar: together they may "
                                     "allow no token at all")
        if not isinstance(self.bad_words, list) or not all(isinstance(w, str) and w.strip() for w in self.bad_words):
            raise HamburgerError(f"bad_words must be a list of non-empty strings, got {self.bad_words!r}")
        if self.bad_words and (self.json_schema is not None or self.grammar is not None):
            raise HamburgerError("bad_words cannot go with a JSON schema or a grammar: together they may allow no "
                                 "token at all")
        if self.prediction is not None and not (isinstance(self.prediction, list) and all(
                isinstance(t, int) and not isinstance(t, bool) and t >= 0 for t in self.prediction)):
            raise HamburgerError("prediction must be a list of token ids")
        return self

    @property
    def penalized(self) -> bool:
        """Whether a penalty, a bias, `allowed_token_ids` or `min_tokens` changes the logits tokens are chosen from."""
        return bool(self.presence_penalty or self.frequency_penalty or self.repetition_penalty != 1.0 or
                    self.logit_bias or self.allowed_token_ids is not None or
                    (self.min_tokens and (not self.ignore_eos or self.stop_token_ids)))

    def ends(self, eos) -> frozenset[int]:
        """The ids that end an answer: the model's end-of-sequence ids ``eos`` (unless `ignore_eos`) and
        `stop_token_ids`."""
        return frozenset(() if self.ignore_eos else eos) | frozenset(self.stop_token_ids)

    def answers(self, n: int) -> list["DecodingConfig"]:
        """The configs of ``n`` answers to one prompt: a seeded config's answers draw with the seeds seed, seed + 1, ...
        (seed - 1, ... past the largest seed, 2^64 - 1), so they differ and each is reproducible."""
        if self.seed is None or n == 1:
            return [self] * n
        step = 1 if self.seed + n <= 1 << 64 else -1
        return [replace(self, seed=self.seed + step * i) for i in range(n)]

    @property
    def greedy(self) -> bool:
        return self.temperature == 0.0

    def make_generator(self) -> torch.Generator | None:
        if self.greedy:
            return None
        g = torch.Generator()
        g.manual_seed(self.seed if self.seed is not None else torch.seed())
        return g


def _number_in(value, lo: float, hi: float) -> bool:
    """A real number (not a bool, not NaN) in [lo, hi], finite."""
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value) and \
        lo <= value <= hi


def top_alternatives(logits: torch.Tensor, k: int) -> list[tuple[int, float]]:
    """The ``k`` most likely tokens of ``logits`` [V], as (id, log-probability), most likely first."""
    values, ids = torch.log_softmax(logits.float(), -1).topk(k)
    return list(zip(ids.tolist(), values.tolist()))


class Adjust(Protocol):
    """What a row's request does to the logits its tokens are chosen from (`penalties.Penalties`, `grammar.Grammar`):
    called on one position's logits [V], as if the answer also held the tokens ``after`` (a verify step's drafts
    before that position); told each token the row takes."""

    def __call__(self, logits: torch.Tensor, after: Sequence[int] = ()) -> torch.Tensor: ...

    def add(self, token: int) -> None: ...


def adjusted(logits: torch.Tensor, adjusts: Sequence[Adjust], after: Sequence[int] = ()) -> torch.Tensor:
    """One position's logits [V] through a row's ``adjusts``, in order."""
    for adjust in adjusts:
        logits = adjust(logits, after)
    return logits


def choice_logits(logits: torch.Tensor, adjusts: Sequence[Sequence[Adjust]]) -> torch.Tensor:
    """The logits [B, V] tokens are chosen from: each row's through its own ``adjusts`` (the same tensor when no row
    has any)."""
    if not any(adjusts):
        return logits
    out = logits.float().clone()
    for b, row in enumerate(adjusts):
        if row:
            out[b] = adjusted(logits[b], row)
    return out


def along(logits: torch.Tensor, adjusts: Sequence[Adjust], drafts: Sequence[int], start: int = 0) -> torch.Tensor:
    """A row's logits [n, V] at positions start, start + 1, ... of a verify step adjusted, each as if the answer held the
    drafts before it (its test only runs once those were kept)."""
    if not adjusts:
        return logits
    return torch.stack([adjusted(row, adjusts, drafts[:start + j]) for j, row in enumerate(logits)])


def knob_gates(confidence: float, gate: str, prefilter: float = 0.0) -> tuple[float, float]:
    """The knob as the two tests a micro token passes (`core.config.GATES`): (the least -stop_logit after the
    previous token for the group to go on, the least probability the MSD must give the token itself). With gate
    token_prob the first test is the ``prefilter`` times the knob (none at 0): below it the MSD is not asked."""
    if confidence >= 1.0 or gate == "stop_head":
        return continue_threshold(confidence), 0.0
    return (continue_threshold(prefilter * confidence) if prefilter > 0 else -math.inf), confidence


def continue_threshold(confidence: float) -> float:
    """Keep going iff -stop_logit >= this, i.e. sigmoid(-stop_logit) = 1 - p_stop >= confidence.

    Comparing logits avoids float rounding of sigmoid near 1: confidence 1.0 maps to +inf, so a
    group never continues, exactly.
    """
    if confidence >= 1.0:
        return math.inf
    return math.log(confidence / (1.0 - confidence))


NUCLEUS_START = 64  # `nucleus` first looks among this many of the most likely tokens, then 4x as many, ...


def nucleus(logits: torch.Tensor, top_p: float | torch.Tensor) -> torch.Tensor:
    """The top-p set of each row of logits [..., V] as a boolean mask: the most likely tokens, in order, up to and
    including the first at which their probability reaches ``top_p`` (one for every row, or one per row [...]; a row
    at 1 keeps every token). Exact without sorting the vocabulary: the k most likely tokens (k = 64, 256, ... until
    they reach ``top_p``) hold the set, since every later token's preceding mass is already at least ``top_p``. Each
    row grows its own k, so its set never depends on the other rows. The masses add up in float64."""
    vocab, k = logits.shape[-1], min(NUCLEUS_START, logits.shape[-1])
    probs = logits.softmax(-1).reshape(-1, vocab)
    p = torch.as_tensor(top_p, dtype=torch.float64, device=logits.device).expand(logits.shape[:-1]).reshape(-1)
    keep, done = _top_set(probs, p, k)
    whole = p >= 1.0
    todo = (~done & ~whole).nonzero()[:, 0]
    while todo.numel():
        k = min(4 * k, vocab)
        kept, done = _top_set(probs[todo], p[todo], k)
        keep[todo] = kept  # (rows not done yet are written again at a bigger k)
        todo = todo[~done]
    if whole.any():
        keep[whole] = True
    return keep.reshape(logits.shape)


def _top_set(probs: torch.Tensor, top_p: torch.Tensor, k: int) -> tuple[torch.Tensor, torch.Tensor]:
    """`nucleus` among the ``k`` most likely tokens of each row of ``probs`` [n, V]: (the set [n, V], whether the row's
    k tokens reach its ``top_p`` [n], so that the set is the whole nucleus)."""
    values, order = torch.topk(probs, k)  # (sorted, most likely first)
    cumulative = values.double().cumsum(-1)
    done = (cumulative[:, -1] >= top_p) | (k == probs.shape[-1])
    before = cumulative - values  # the mass before each token is still short of top_p:
    return torch.zeros_like(probs, dtype=torch.bool).scatter_(1, order, before < top_p[:, None]), done


def warp_logits(logits: torch.Tensor, cfg: DecodingConfig) -> torch.Tensor:
    """Temperature, then top-k, then top-p (nucleus), then min-p filtering of one row's logits [V] (transformers'
    order; top-k and top-p keep the most likely token, and min-p compares with it)."""
    return warp_rows(logits[None], **row_settings([cfg], logits.device))[0]


def row_settings(cfgs: Sequence[DecodingConfig], device: torch.device | str | None = None) -> dict[str, torch.Tensor]:
    """The sampling settings of ``cfgs``, one row each, as `warp_rows` takes them."""
    return {name: torch.tensor([getattr(c, name) for c in cfgs], device=device,
                               dtype=torch.long if name == "top_k" else torch.float64)
            for name in ("temperature", "top_k", "top_p", "min_p")}


def warp_rows(logits: torch.Tensor, temperature: torch.Tensor, top_k: torch.Tensor, top_p: torch.Tensor,
              min_p: torch.Tensor | None = None) -> torch.Tensor:
    """`warp_logits` for each row of logits [B, V] with its own settings [B] (top_k 0: off; min_p None: off; a row at
    temperature 0 is only filtered, its token is the argmax). A row's result never depends on the other rows. It
    reads the settings on the host (a sync); `draw_tokens` warps without one."""
    vocab = logits.shape[-1]
    scaled = logits.float() / torch.where(temperature == 0, 1.0, temperature).float()[:, None]
    cut = (top_k > 0) & (top_k < vocab)
    if cut.any():
        ranked = torch.topk(scaled, int(top_k[cut].max())).values
        kth = ranked.gather(1, (torch.where(cut, top_k, 1) - 1).long()[:, None])
        scaled = scaled.masked_fill(cut[:, None] & (scaled < kth), -math.inf)
    if (top_p < 1.0).any():
        scaled = scaled.masked_fill(~nucleus(scaled, top_p), -math.inf)
    if min_p is not None and (min_p > 0).any():  # (p_i >= min_p p_max, in logits; min_p 0: log 0 = -inf drops nothing)
        floor = scaled.max(-1, keepdim=True).values + min_p.double().log().float()[:, None]
        scaled = scaled.masked_fill(scaled < floor, -math.inf)
    return scaled


def warped_probs(logits: torch.Tensor, cfg: DecodingConfig) -> torch.Tensor:
    """The distribution [V] a sampled row draws from: `warp_logits`, normalised."""
    return warp_logits(logits, cfg).softmax(-1)


def sample(probs: torch.Tensor, generator: torch.Generator | None) -> int:
    """One draw from ``probs`` [V] with a request's generator (`invert_cdf`). The generator lives on the CPU, so the
    draw happens there whatever device the model runs on: a seed gives the same tokens on a CPU and a GPU.
    (`torch.multinomial` draws the same distribution at 1.2 ms per draw from a 49k-token vocabulary on a 2-core CPU;
    this takes 0.08 ms: experiments/2026-11-27-fast-draw/.)"""
    if generator is not None and probs.device != generator.device:
        probs = probs.to(generator.device)
    return int(invert_cdf(probs[None], torch.rand((1,), generator=generator, dtype=torch.float64,
                                                  device=probs.device))[0])


def invert_cdf(probs: torch.Tensor, uniform: torch.Tensor) -> torch.Tensor:
    """For each row of ``probs`` [B, V] and its uniform draw in [0, 1) [B], the token where the row's float64 CDF, in
    vocabulary order, first exceeds the draw scaled by the row's total mass. In vocabulary order, logits that move
    by rounding (another batch's padding) move a token only where the draw lands within that rounding of its edge."""
    cdf = probs.double().cumsum(-1)
    at = torch.searchsorted(cdf, uniform.double()[:, None] * cdf[:, -1:], right=True)
    return at[:, 0].clamp(max=cdf.shape[-1] - 1)


def choose_tokens(logits: torch.Tensor, cfgs: list[DecodingConfig],
                  generators: list[torch.Generator | None]) -> torch.Tensor:
    """One token per row of logits [B, V]; each row uses its own settings and generator, so a
    row's random stream never depends on what else is in the batch."""
    if all(c.greedy for c in cfgs):
        return logits.argmax(-1)
    return draw_each(logits, cfgs, generators)[0]


def draw_each(logits: torch.Tensor, cfgs: list[DecodingConfig],
              generators: list[torch.Generator | None]) -> tuple[torch.Tensor, list[torch.Tensor | None]]:
    """`choose_tokens`, and the distribution each sampled row drew from (`warped_probs`; None for a greedy row): the
    sampled rows are warped together (`warp_rows`), then each draws with its own generator (`sample`)."""
    out, dists = logits.argmax(-1), [None] * len(cfgs)
    sampled = [b for b, cfg in enumerate(cfgs) if not cfg.greedy]
    if sampled:
        probs = warp_rows(logits[sampled], **row_settings([cfgs[b] for b in sampled], logits.device)).softmax(-1)
        for b, row in zip(sampled, probs):
            out[b], dists[b] = sample(row, generators[b]), row
    return out, dists


def draw_tokens(logits: torch.Tensor, temperature: torch.Tensor, top_k: torch.Tensor, top_p: torch.Tensor,
                uniform: torch.Tensor, min_p: torch.Tensor | None = None) -> torch.Tensor:
    """One token per row of logits [B, V] on the device, each row with its own settings [B] (temperature 0 is
    greedy; ``min_p`` None: none) and a uniform draw in [0, 1) [B]: `warp_logits` for all rows at once (top-k and
    top-p over the sorted vocabulary, masses in float64 as `nucleus` adds them), then the warped CDF in vocabulary
    order inverted at the uniform, as `draw_rows` and `sample` invert theirs (`invert_cdf`). No host sync (the caller
    draws the uniforms from each row's generator)."""
    greedy = temperature == 0
    scaled = logits.float() / torch.where(greedy, 1.0, temperature).float()[:, None]
    ordered, order = torch.sort(scaled, -1, descending=True)
    vocab = logits.shape[-1]
    k = torch.where((top_k > 0) & (top_k < vocab), top_k, vocab).long()
    ordered = ordered.masked_fill(ordered < ordered.gather(1, k[:, None] - 1), -math.inf)
    probs = ordered.softmax(-1)
    drop = (probs.double().cumsum(-1) - probs >= top_p.double()[:, None]) & (top_p < 1.0)[:, None]
    if min_p is not None:  # (min_p 0: log 0 = -inf drops nothing)
        drop = drop | (ordered < ordered[:, :1] + min_p.double().log().float()[:, None])
    warped = torch.zeros_like(probs).scatter_(1, order, probs.masked_fill(drop, 0.0))  # (back in vocabulary order)
    return torch.where(greedy, logits.argmax(-1), invert_cdf(warped, uniform))


def draw_rows(logits: torch.Tensor, temperature: torch.Tensor, top_k: torch.Tensor, top_p: torch.Tensor,
              uniform: torch.Tensor, min_p: torch.Tensor | None = None) -> torch.Tensor:
    """`draw_tokens` for a loop the host drives: each row's token is the one `sample` draws from its `warped_probs`
    at the same uniform (`warp_rows`, `invert_cdf`). The top-p set comes without sorting the vocabulary, at the cost
    of host syncs; at 32 rows of a 49k-token vocabulary on a 2-core CPU that sort was 13% of a sampled distillation's
    time (experiments/2026-12-07-distill-batch/)."""
    greedy = temperature == 0
    probs = warp_rows(logits, temperature, top_k, top_p, min_p).softmax(-1)
    return torch.where(greedy, logits.argmax(-1), invert_cdf(probs, uniform))
