"""Where the fold's failed copies copy from, and which keep rules decided at fold time would have kept the source.

For every answer of the sampled fold arms on dev rows 120-239 (../2026-11-27-draws/) whose worst token is above
6 nats, and whose base-likeliest token there prompt lookup drafts (`engine/lookup.py`'s match: the copy source is
the token after the latest earlier occurrence of the context's last n-gram), where that source sits: the prompt,
the answer inside the default fold's window, or the answer's folded history. For a source in folded history,
whether a rule decided when the source's group folds (answer length f with f - max(60, 0.45 f) >= source) keeps it:
  * ``repeated``: the bigram ending at the source occurs again in the answer after it, before the fold;
  * ``novel``: that bigram does not occur in the prompt;
  * ``either``/``both`` of them.
and whether the default fold (keep ``first``, the base's entropy cut teacher-forced on the answer) dropped it at
all. Beside it, the share of the tokens the default fold drops by the answer's end (a group's later tokens, past the
window) that each rule would keep instead, over every answer of af-reader's decodes: its KV cost before a budget.

    python experiments/2026-11-28-copy-keep/sources.py > experiments/2026-11-28-copy-keep/sources.txt
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import torch

from hamburger.bench.machine import machine_info
from hamburger.core.base import load_base
from hamburger.data.segment import log_softmax_entropy, segment_entropies
from hamburger.engine.folding import READER_FOLD as DEFAULT_FOLD, parse_folding  # (the default when this ran)
from hamburger.engine.lookup import PromptLookup
from hamburger.engine.prompt import encode_prompt
from hamburger.eval.run import gsm8k_examples

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "2026-11-28-tail-guard"))
from spikes_copy import ARMS, DRAWS, ROWS, SHARE, SPIKE, WINDOW  # noqa: E402  (session 46's arms and constants)

RULES = ("repeated", "novel", "either", "both")
CUT = parse_folding(DEFAULT_FOLD).segments


def dropped(logits: torch.Tensor) -> set[int]:
    """The answer tokens keep ``first`` drops once folded: all but the first of each group of the entropy cut."""
    sizes = segment_entropies(log_softmax_entropy(logits)[1].tolist(), CUT, logits.shape[-1])
    out, start = set(), 0
    for n in sizes:
        out.update(range(start + 1, start + n))
        start += n
    return out


@torch.no_grad()
def answer_logits(lm, prompt: list[int], ids: list[int]) -> torch.Tensor:
    """The base's logits [len(ids), V] that chose each answer token, reading the whole history."""
    return lm(torch.tensor([prompt + ids])).logits[0, len(prompt) - 1:-1].float()


def fold_time(source: int) -> int:
    """The answer length at which the default fold's window first leaves ``source`` behind."""
    f = source + WINDOW
    while f - max(WINDOW, int(SHARE * f)) < source:
        f += 1
    return f


def bigrams(ids: list[int]) -> set[tuple[int, int]]:
    return set(zip(ids, ids[1:]))


def keeps(prompt: list[int], ids: list[int], j: int, until: int) -> dict[str, bool]:
    """Whether each rule keeps answer token ``j`` when its group folds with ``until`` answer tokens fed."""
    pair = (ids[j - 1] if j else prompt[-1], ids[j])
    repeated = pair in bigrams(ids[j:until])
    novel = pair not in bigrams(prompt)
    return {"repeated": repeated, "novel": novel, "either": repeated or novel, "both": repeated and novel}


@torch.no_grad()
def source_of(lm, tokenizer, question: str, text: str):
    """(where the copy source of the worst token sits, the rules' verdicts there or None)."""
    ids = tokenizer(text, add_special_tokens=False)["input_ids"]
    prompt = encode_prompt(tokenizer, question)
    logits = answer_logits(lm, prompt, ids)
    logprobs = logits.log_softmax(-1)
    at = int((-logprobs.gather(-1, torch.tensor(ids)[:, None])[:, 0]).argmax())
    top = int(logprobs[at].argmax())
    history = prompt + ids[:at]
    lookup = PromptLookup()
    for n in range(min(lookup.ngram, len(history) - 1), lookup.min_ngram - 1, -1):
        tail = history[-n:]
        match = next((s for s in range(len(history) - n - 1, -1, -1) if history[s:s + n] == tail), None)
        if match is not None:
            break
    if match is None or history[match + n] != top:
        return "no lookup draft", None
    source = match + n - len(prompt)
    if source < 0:
        return "prompt", None
    if source >= at - max(WINDOW, int(SHARE * at)):
        return "window", None
    if source not in dropped(logits):
        return "folded history, kept by the fold", None
    return "folded history, dropped", keeps(prompt, ids, source, fold_time(source))


def main() -> None:
    torch.set_num_threads(2)
    lm, tokenizer = load_base()[:2]
    questions = {e.id: e.prompt for e in gsm8k_examples(str(ROWS), 120)}
    print(f"machine: {json.dumps(machine_info(2, 'float32'))}\n")
    places, verdicts = {}, {r: 0 for r in RULES}
    for name in ARMS:
        run = DRAWS / f"eval-rows120-240-{name}/examples.jsonl"
        rows = [r for r in map(json.loads, run.read_text().splitlines())
                if r["method"] == "verify-fold-sampled" and r["worst_token_nll"] > SPIKE]
        for r in rows:
            place, kept = source_of(lm, tokenizer, questions[r["id"]], r["text"])
            places[place] = places.get(place, 0) + 1
            for rule in RULES:
                verdicts[rule] += bool(kept and kept[rule])
    print(f"fold arms' answers > {SPIKE} nats, by where their worst token's lookup source sits: {places}")
    print(f"... of the {places.get('folded history, dropped', 0)} the fold dropped, kept by each rule: {verdicts}\n")
    cost, past = {r: 0 for r in RULES}, 0
    run = DRAWS / "eval-rows120-240-af-reader/examples.jsonl"
    for r in map(json.loads, run.read_text().splitlines()):
        if r["method"] != "verify-fold-sampled":
            continue
        ids = tokenizer(r["text"], add_special_tokens=False)["input_ids"]
        prompt = encode_prompt(tokenizer, questions[r["id"]])
        end = len(ids) - max(WINDOW, int(SHARE * len(ids)))
        for j in sorted(j for j in dropped(answer_logits(lm, prompt, ids)) if j < end):
            past += 1
            kept = keeps(prompt, ids, j, min(len(ids), fold_time(j)))
            for rule in RULES:
                cost[rule] += kept[rule]
    print(f"af-reader's answers: {past} tokens the fold drops by their end; share each rule keeps: "
          + ", ".join(f"{rule} {cost[rule] / past:.3f}" for rule in RULES))


if __name__ == "__main__":
    main()
