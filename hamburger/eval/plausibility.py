"""How plausible an answer is to the unchanged base model: a quality measure that does not punish a
harmless change of wording the way agreement with the base's greedy answer does.

Per answer (its token ids as generated, end-of-sequence included when it was emitted):
  nll_per_token    mean negative log-likelihood per answer token under the base, teacher-forced after the
                   chat-templated prompt (nats)
  worst_token_nll  the answer's largest single-token NLL (a wrong token shows as a spike)
  rep4             repeated-4-gram rate: share of the answer's token 4-grams that already occurred earlier
                   in it (0 = no repetition), end-of-sequence left out
The reference for "as good as the base" is the base's own sampled answers (temperature 0.7, top-p 0.9,
fixed seeds), scored the same way; see `evaluate`.
"""

from __future__ import annotations

import torch


KEYS = ("nll_per_token", "worst_token_nll", "rep4")
SAMPLED = {"temperature": 0.7, "top_p": 0.9}  # the base-sampled reference method


@torch.no_grad()
def base_reading(lm, prompt_ids: list[int], answer_ids: list[int]) -> tuple[list[float], list[int]]:
    """Teacher-forced under the causal LM `lm` (a Hugging Face model), given the prompt: the NLL of each
    answer token, and the model's own greedy choice at each answer position."""
    if not answer_ids:
        return [], []
    ids = torch.tensor([prompt_ids + answer_ids], device=lm.device)
    logits = lm(input_ids=ids).logits[0, len(prompt_ids) - 1:-1].float()
    logp = torch.log_softmax(logits, -1)
    return (-logp.gather(-1, ids[0, len(prompt_ids):, None])[:, 0]).tolist(), logits.argmax(-1).tolist()


def token_nll(lm, prompt_ids: list[int], answer_ids: list[int]) -> list[float]:
    """NLL of each answer token under the causal LM `lm`, given the prompt."""
    return base_reading(lm, prompt_ids, answer_ids)[0]


KINDS = ("single", "after_merge", "micro")  # who wrote an answer token, see token_kinds
SPIKE_NLL = 5.0  # a spike: a token the base gives less than e^-5 (0.7%)


def token_kinds(groups: list[int], length: int) -> list[str]:
    """Who wrote each of an answer's ``length`` tokens, from its groups: "micro" for tokens 2..k of a group (the
    micro-step decoder), "after_merge" for the first token of a group after a group of 2+ tokens (the skip path
    reading a smashed group), "single" for the first token of every other group (the base after unmerged history,
    as an ordinary decode)."""
    kinds = []
    for i, n in enumerate(groups):
        kinds += ["after_merge" if i and groups[i - 1] > 1 else "single"] + ["micro"] * (n - 1)
    return kinds[:length]


def micro_agreement(answer_ids: list[int], groups: list[int], greedy: list[int]) -> tuple[int, int]:
    """(micro tokens, how many equal the base's greedy choice there): the tokens 2..k of every group,
    which the micro-step decoder wrote, against `greedy` from `base_reading` of the same answer."""
    return _agreement(answer_ids, groups, greedy, "micro")


def after_merge_agreement(answer_ids: list[int], groups: list[int], greedy: list[int]) -> tuple[int, int]:
    """(tokens the base predicted from a merged slot, how many equal its greedy choice there): the first token
    of every group after a group of 2+ tokens, the skip path reading a smashed group."""
    return _agreement(answer_ids, groups, greedy, "after_merge")


def _agreement(answer_ids: list[int], groups: list[int], greedy: list[int], kind: str) -> tuple[int, int]:
    at = [i for i, k in enumerate(token_kinds(groups, len(answer_ids))) if k == kind]
    return len(at), sum(answer_ids[i] == greedy[i] for i in at)


def nll_by_kind(nll: list[float], groups: list[int]) -> dict:
    """Where an answer's NLL under the base sits, by who wrote each token (`token_kinds`): per kind the tokens,
    their NLL sum and spikes (NLL > SPIKE_NLL), and the kind of the answer's worst token (None when empty)."""
    kinds = token_kinds(groups, len(nll))
    out = {k: {"tokens": 0, "nll": 0.0, "spikes": 0} for k in KINDS}
    for kind, x in zip(kinds, nll):
        out[kind]["tokens"] += 1
        out[kind]["nll"] += x
        out[kind]["spikes"] += x > SPIKE_NLL
    worst = max(range(len(nll)), key=nll.__getitem__) if nll else None
    return {"by_kind": out, "worst_kind": None if worst is None else kinds[worst]}


def after_merge_by_size(answer_ids: list[int], groups: list[int], greedy: list[int], nll: list[float]) -> dict:
    """The skip path's reading split by how many tokens the merged slot it reads holds: for every group after a
    group of k >= 2 tokens, its first token counted under str(k) -> tokens, how many equal the base's greedy choice
    (`greedy` from `base_reading`), their NLL sum and spikes (NLL > SPIKE_NLL)."""
    out: dict[str, dict] = {}
    at = 0
    for i, n in enumerate(groups):
        if at >= len(answer_ids):
            break
        if i and groups[i - 1] > 1:
            entry = out.setdefault(str(groups[i - 1]), {"tokens": 0, "ok": 0, "nll": 0.0, "spikes": 0})
            entry["tokens"] += 1
            entry["ok"] += answer_ids[at] == greedy[at]
            entry["nll"] += nll[at]
            entry["spikes"] += nll[at] > SPIKE_NLL
        at += n
    return out


def repeated_ngram_mask(ids: list[int], n: int = 4) -> list[bool]:
    """For each token: whether the n-gram ending at it already occurred earlier in ``ids`` (a *repeat*; False for
    the first n - 1 tokens)."""
    seen: set[tuple[int, ...]] = set()
    mask = [False] * min(len(ids), n - 1)
    for end in range(n - 1, len(ids)):
        gram = tuple(ids[end - n + 1:end + 1])
        mask.append(gram in seen)
        seen.add(gram)
    return mask


def repeated_ngram_rate(ids: list[int], n: int = 4) -> float:
    """The share of the n-grams of ``ids`` that are repeats: `repeated_ngram_mask`'s count over the n-grams."""
    grams = [tuple(ids[i:i + n]) for i in range(len(ids) - n + 1)]
    return 1.0 - len(set(grams)) / len(grams) if grams else 0.0


def plausibility(lm, prompt_ids: list[int], answer_ids: list[int], eos: set[int] = frozenset(),
                 reading: list[float] | None = None) -> dict:
    """The three measures of one answer (an empty answer: NLL 0, no repetition); ``reading``: its token
    NLLs when already computed (`base_reading`)."""
    nll = token_nll(lm, prompt_ids, answer_ids) if reading is None else reading
    body = [t for t in answer_ids if t not in eos]
    return {"nll_per_token": sum(nll) / len(nll) if nll else 0.0, "worst_token_nll": max(nll, default=0.0),
            "rep4": repeated_ngram_rate(body)}
