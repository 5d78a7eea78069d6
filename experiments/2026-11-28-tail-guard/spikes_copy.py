"""The decodes' own spikes checked against kinds.py's teacher-forced finding: for every answer of the sampled
long-math arms on dev rows 120-239 (../2026-11-27-draws/, three draws) whose worst token under the unchanged base is
above 6 nats, and for the base's own samples likewise, the base's likeliest token at that position (teacher-forced
after the chat-templated prompt, the text re-tokenized), its probability, and whether it occurs earlier in the answer
before the default fold's window (max(60, 0.45 x the position)): a copy from history the fold had folded; and
whether prompt lookup (`engine/lookup.py`, its defaults, over the prompt and the answer so far: the host-side token
history, whole whatever the cache folded) drafts that likeliest token there.

    python experiments/2026-11-28-tail-guard/spikes_copy.py > experiments/2026-11-28-tail-guard/spikes_copy.txt
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import torch

from hamburger.bench.machine import machine_info
from hamburger.core.base import load_base
from hamburger.engine.lookup import PromptLookup
from hamburger.engine.prompt import encode_prompt
from hamburger.eval.run import gsm8k_examples

HERE = Path(__file__).resolve().parent
DRAWS = HERE.parent / "2026-11-27-draws"
ROWS = HERE.parent / "2026-11-27-growing-first/gsm8k_dev_120_240.jsonl"
ARMS = ("s45", "af-reader", "offtop", "sr", "fkl", "rkl", "af-kv65", "guard-t05", "guard-t06")
SPIKE, WINDOW, SHARE = 6.0, 60, 0.45


@torch.no_grad()
def at_worst(lm, tokenizer, question: str, text: str) -> tuple[float, int, str, str, float, bool, bool]:
    """(worst NLL, its position, the token, the base's likeliest there, its probability, whether the likeliest occurs
    in the answer before the fold's window, whether prompt lookup drafts the likeliest there)."""
    ids = tokenizer(text, add_special_tokens=False)["input_ids"]
    prompt = encode_prompt(tokenizer, question)
    logits = lm(torch.tensor([prompt + ids])).logits[0, len(prompt) - 1:-1].float()
    logprobs = logits.log_softmax(-1)
    nll = -logprobs.gather(-1, torch.tensor(ids)[:, None])[:, 0]
    at = int(nll.argmax())
    top = int(logprobs[at].argmax())
    folded = at - max(WINDOW, int(SHARE * at))
    drafted = PromptLookup().propose(prompt + ids[:at], 1)
    return (float(nll[at]), at, tokenizer.decode([ids[at]]), tokenizer.decode([top]), float(logprobs[at, top].exp()),
            top in ids[:max(0, folded)], drafted == [top])


def main() -> None:
    torch.set_num_threads(2)
    lm, tokenizer = load_base()[:2]
    questions = {e.id: e.prompt for e in gsm8k_examples(str(ROWS), 120)}
    print(f"machine: {json.dumps(machine_info(2, 'float32'))}\n")
    print("| arm | answers > 6 nats | whose base-likeliest token is in the folded history | ... and base >= 0.9 "
          "| lookup drafts the base-likeliest |")
    print("|---|---|---|---|---|")
    lines, totals = [], [0, 0, 0, 0]
    for name in ("base-sampled",) + ARMS:
        run = DRAWS / f"eval-rows120-240-{'s45' if name == 'base-sampled' else name}/examples.jsonl"
        if not run.exists():
            print(f"(skipped {name}: not decoded)", file=sys.stderr)
            continue
        method = "base-sampled" if name == "base-sampled" else "verify-fold-sampled"
        rows = [r for r in map(json.loads, run.read_text().splitlines())
                if r["method"] == method and r["worst_token_nll"] > SPIKE]
        found = [at_worst(lm, tokenizer, questions[r["id"]], r["text"]) for r in rows]
        copied = sum(f[5] for f in found)
        sure = sum(f[5] and f[4] >= 0.9 for f in found)
        counts = [len(found), copied, sure, sum(f[6] for f in found)]
        print("| " + " | ".join([name] + [str(c) for c in counts]) + " |")
        if name != "base-sampled":
            totals = [t + c for t, c in zip(totals, counts)]
        lines += [f"| {name} | {r['id']} | {r.get('draw') or 0} | {f[0]:.2f} | {f[1]} | {f[2]!r} "
                  f"| {f[3]!r} ({f[4]:.2f}) "
                  f"| {'yes' if f[5] else 'no'} | {'yes' if f[6] else 'no'} |" for r, f in zip(rows, found)]
    print("| every fold arm | " + " | ".join(map(str, totals)) + " |")
    print("\n| arm | id | draw | worst NLL | position | token | base's likeliest (p) | in folded history | lookup "
          "drafts it |")
    print("|---|---|---|---|---|---|---|---|---|")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
