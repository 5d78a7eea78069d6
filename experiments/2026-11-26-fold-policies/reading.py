"""How faithfully the default model reads a folded answer, teacher-forced, by fold policy (issue 19, session 26).

Decoded evals of 20 prompts per task judge a folding by each answer's worst token, with intervals of +-1-1.5 nats.
This measures the same thing at every position of 80 fixed 256-token answers to the dev prompts: the base's greedy
and sampled answers (T 0.7, top-p 0.9) to the 20 chat + 20 GSM8K dev prompts of
experiments/2026-11-26-long-answers/ (their examples.jsonl; the texts re-tokenized). Each answer is read once as the
base reads it (every token its own slot) and once per policy in verify-fold's layout: the engine's own `FoldState`
decides what folds, one answer token per forward (a group folds before the forward that feeds the token `window`
tokens after its end), on the base's own entropies; every merged slot sits at its last token's position and from
then on replaces the group's single slots (one uncached forward with the mask the engine's cache amounts to:
`folded_reference_logits` of `tests/engine/test_verify_fold.py`, which the engine is tested against). At every answer position:

  * flip: the folded reading's top token is not the unfolded base's;
  * spike: the folded reading's top token costs the unfolded base > 6 nats (what a decode would emit as a wrong
    token; the base's own greedy choice never does);
  * KL(unfolded || folded), mean;
  * (added in session 31: forward KL does not see what sampling pays) reverse KL(folded || unfolded), mean; and under
    the eval's sampling (T 0.7, top-p 0.9) of each reading, the unfolded base's expected NLL of the sampled token
    (folded minus unfolded: the sampled NLL-per-token gap) and the expected count of sampled tokens costing the
    unfolded base > 6 nats (sampled spikes; the unfolded base's own count beside it);
  * KV: the answer's slots at its end over its tokens, and when 128 of its tokens are cached (answers beyond 128).

The unfolded reference is the checkpoint's unchanged base (`load_reference`): for a checkpoint whose base trained
(session 40: ../2026-11-27-keep-fold-full/) the folded reading is the trained model's, its segments cut on its own
entropies, as it decodes.

A policy is a `parse_folding` spec (e.g. ``segments:64:first:steps=8:p=0.7``), optionally followed by a rule word that
filters the groups that fold (the others stay as single slots, decided):
``nodigit`` folds no group holding a digit; ``calm<E>`` folds only groups whose tokens all had entropy < E nats.

    python experiments/2026-11-26-fold-policies/reading.py > experiments/2026-11-26-fold-policies/reading.txt
    python experiments/2026-11-26-fold-policies/reading.py --model CKPT [--name NAME] \
        --policies segments:32,segments:64 > experiments/2026-11-26-fold-policies/reading-NAME.txt  # (+ reading-NAME.json)

(``forwards`` groupings are what a decode's forwards kept: one token per forward here, so `forwards:32` folds
nothing: a second control.)
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import torch

from hamburger.core.loading import load_model
from hamburger.data.segment import log_softmax_entropy
from hamburger.engine.folding import Folding, FoldState, parse_folding
from hamburger.engine.prompt import encode_prompt
from hamburger.engine.sampling import DecodingConfig, warped_probs
from hamburger.eval.run import chat_examples, gsm8k_examples

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # (the tests' reference construction)
from tests.engine.test_verify_fold import folded_reference_logits  # noqa: E402

HERE = Path(__file__).resolve().parent
LONG = HERE.parent / "2026-11-26-long-answers"
EVALS = {"chat": LONG / "eval-dev-default-segments-32-c0.3-p10-t256-chat",
         "gsm8k": LONG / "eval-dev-default-segments-32-c0.3-p10-t256-gsm8k"}
POLICIES = ["segments:100000", "segments:16", "segments:32", "segments:48", "segments:64", "segments:32:0.25",
            "segments:32 nodigit", "segments:32 calm1", "segments:32 calm2", "forwards:32"]
SPIKE = 6.0  # nats  (segments:100000: nothing folds, the control: no flips)
SAMPLING = DecodingConfig(temperature=0.7, top_p=0.9)  # the eval's base-sampled settings


def sampled(logp: torch.Tensor, ref: torch.Tensor) -> tuple[float, float]:
    """Summed over positions, when each position's token is drawn from ``logp`` [n, V] warped by SAMPLING: the
    unfolded base's (``ref``) expected NLL of the drawn token, and the expected number of drawn tokens it puts > SPIKE
    nats on."""
    probs = torch.stack([warped_probs(row, SAMPLING) for row in logp])
    return float(-(probs * ref.clamp(min=-1e4)).sum()), float((probs * (-ref > SPIKE)).sum())


def answers(tokenizer) -> list[tuple[str, str, list[int], list[int]]]:
    """(task, method, prompt ids, answer ids) of the base's greedy and sampled 256-token dev answers."""
    prompts = {**{e.id: e.prompt for e in gsm8k_examples(None, 20)}, **{e.id: e.prompt for e in chat_examples(20)}}
    out = []
    for task, folder in EVALS.items():
        for line in (folder / "examples.jsonl").read_text().splitlines():
            r = json.loads(line)
            if r["method"] in ("base", "base-sampled"):
                ids = tokenizer(r["text"], add_special_tokens=False)["input_ids"]
                out.append((task, r["method"], encode_prompt(tokenizer, prompts[r["id"]]), ids))
    return out


def keeps(policy: str, tokenizer, answer: list[int], entropies: list[float]):
    """The group filter of a policy name's rule word (None: every due group folds)."""
    _, _, rule = policy.partition(" ")
    if not rule:
        return None
    if rule == "nodigit":
        return lambda s, e: not any(c.isdigit() for c in tokenizer.decode(answer[s:e]))
    if rule.startswith("calm"):
        limit = float(rule[4:])
        return lambda s, e: max(entropies[s:e]) < limit
    raise ValueError(policy)


def schedule(policy: str, folding: Folding, tokenizer, answer: list[int], entropies: list[float], vocab: int
             ) -> list[list[tuple[int, int]]]:
    """The groups folded before each answer token's forward (one token per forward), by the engine's `FoldState`."""
    state, keep, out = FoldState(folding, vocab), keeps(policy, tokenizer, answer, entropies), []
    state.entropies = entropies
    for i in range(len(answer) - 1):  # the last answer token is never fed
        due = state.due(i)
        out.append([g for g in due if keep is None or keep(*g)])
        state.fed(i, i + 1)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--model", default=None, help="checkpoint folder (default: the bundled model)")
    parser.add_argument("--name", default=None, help="the raw counts go to reading-NAME.json (default: the model "
                        "folder's name; no --model: reading.json)")
    parser.add_argument("--policies", default=",".join(POLICIES), help="comma list (default: %(default)s)")
    parser.add_argument("--threads", type=int, default=2, help="torch CPU threads (default: %(default)s)")
    args = parser.parse_args()
    policies = args.policies.split(",")
    foldings = {p: parse_folding(p.partition(" ")[0]) for p in policies}  # (refused specs fail before any reading)
    torch.set_num_threads(args.threads)
    model, tokenizer, _, reference = load_model(args.model, reference=True)
    vocab = model.base.config.vocab_size
    stats = {p: {} for p in policies}
    rows = answers(tokenizer)

    def unfolded(m, prompt: list[int], answer: list[int]) -> torch.Tensor:
        """``m``'s logits of answer tokens 0.. reading every token in its own slot."""
        with torch.no_grad():
            n_all = len(prompt) + len(answer)
            final, _ = m.base_forward(m.embed(torch.tensor([prompt + answer])), torch.arange(n_all)[None],
                                      torch.ones(n_all, n_all, dtype=torch.bool).tril()[None, None])
            return m.lm_head(final[0, len(prompt) - 1:]).float()

    for n, (task, method, prompt, answer) in enumerate(rows):
        # the unchanged base (`load_reference`; the model itself when its base is: its adapters act at merged slots
        # only, none here). A checkpoint whose base trained cuts its segments on its own entropies, as it decodes.
        logp, entropy = log_softmax_entropy(unfolded(reference, prompt, answer))
        if reference is not model:
            entropy = log_softmax_entropy(unfolded(model, prompt, answer))[1]
        entropies = entropy.tolist()  # of the distributions that chose answer tokens 0..
        ref = logp[1:len(answer)]  # predicting answer tokens 1.. (the first one's slot is the prompt's: unchanged)
        base_sampled = sampled(ref, ref)
        for policy in policies:
            folding = foldings[policy]
            folds = schedule(policy, folding, tokenizer, answer, entropies, vocab)
            got = torch.log_softmax(
                folded_reference_logits(model, prompt, answer, [1] * len(folds), folds, folding.keep)[1:], -1)
            top = got.argmax(-1)
            flip = top != ref.argmax(-1)
            spike = -ref.gather(1, top[:, None])[:, 0] > SPIKE
            kl = (ref.exp() * (ref - got)).sum(-1)
            rkl = (got.exp() * (got - ref)).sum(-1)
            merged = sum(e - s - 1 for groups in folds for s, e in groups)
            merged_128 = sum(e - s - 1 for groups in folds[:128] for s, e in groups)  # when 128 tokens are cached
            s = stats[policy].setdefault((task, method), {"positions": 0, "flips": 0, "spikes": 0, "kl": 0.0,
                                                          "late_flips": 0, "late": 0, "tokens": 0, "slots": 0,
                                                          "slots_128": 0, "answers_128": 0, "rkl": 0.0,
                                                          "sampled_nll": 0.0, "sampled_spikes": 0.0,
                                                          "base_sampled_nll": 0.0, "base_sampled_spikes": 0.0})
            late = torch.arange(len(flip)) >= 127  # predicting answer tokens 128..
            s["positions"] += len(flip)
            s["flips"] += int(flip.sum())
            s["spikes"] += int(spike.sum())
            s["kl"] += float(kl.sum())
            s["rkl"] += float(rkl.sum())
            for key, value in zip(("sampled_nll", "sampled_spikes"), sampled(got, ref)):
                s[key] += value
            for key, value in zip(("base_sampled_nll", "base_sampled_spikes"), base_sampled):
                s[key] += value
            s["late"] += int(late.sum())
            s["late_flips"] += int((flip & late).sum())
            s["tokens"] += len(answer)
            s["slots"] += len(answer) - merged
            if len(answer) > 128:
                s["slots_128"] += 128 - merged_128
                s["answers_128"] += 1
        print(f"{n + 1}/{len(rows)}", file=sys.stderr, flush=True)
    print("| policy | answers | positions | flip % | flip % at tokens 128+ | spikes > 6 nats | KL mean | reverse KL "
          "| sampled NLL gap | sampled spikes (base's) | answers' KV | KV at 128 |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|")
    for policy in policies:
        for (task, method), s in sorted(stats[policy].items()):
            n, gap = s["positions"], s["sampled_nll"] - s["base_sampled_nll"]
            print(f"| {policy} | {task} {method} | {n} | {100 * s['flips'] / n:.2f} | "
                  f"{100 * s['late_flips'] / max(1, s['late']):.2f} | {s['spikes']} | {s['kl'] / n:.4f} "
                  f"| {s['rkl'] / n:.4f} | {gap / n:+.4f} | {s['sampled_spikes']:.1f} ({s['base_sampled_spikes']:.1f}) "
                  f"| {s['slots'] / s['tokens']:.3f} | {s['slots_128'] / max(1, 128 * s['answers_128']):.3f} |")
    name = args.name or (Path(args.model).name if args.model else None)
    json.dump({p: {f"{t} {m}": s for (t, m), s in v.items()} for p, v in stats.items()},
              open(HERE / f"reading{'-' + name if name else ''}.json", "w"),
              indent=1)


if __name__ == "__main__":
    main()
