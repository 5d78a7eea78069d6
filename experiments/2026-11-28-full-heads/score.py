"""Which key/value heads need the whole history: teacher-forced, on the default model's own sampled answers to
training prompts (../2026-11-28-on-policy/answers.jsonl.gz; no dev or test prompt).

Each answer runs through the unchanged base (adapters off) in one forward whose attention mask gives every position
what it would see decoding with the default fold (`DEFAULT_FOLD`, keep ``first``): the answer's entropy cut (of the
base's own full-history distributions), replayed token by token through the engine's `FoldState`, says when each
token leaves its slot, and a position sees an earlier answer token only while it is in the cache (in one causal
forward each slot's keys and values are computed from what its own position saw, so this is the decode's cache).
Then, for each (layer, key/value head) in turn, the same forward with that head alone reading the full history
(heads.py's two-channel mask). Per answer position after the first fold: KL(base with its full cache || the folded
reading). A head's score is the mean over answers of the mean KL it takes away; also the same over each answer's 5%
of positions where the folded reading is furthest from the base (the tail, where spikes sit). The last lines score the
chosen set together (``--chosen``, with ``--chosen-only`` alone: chosen.jsonl).

    E=experiments/2026-11-28-full-heads
    python $E/score.py --answers 20 > $E/scores.jsonl
    python $E/score.py --answers 20 --chosen "$(python $E/chosen.py)" --chosen-only > $E/chosen.jsonl
"""

from __future__ import annotations

import argparse
import gzip
import json
import sys
import time
from pathlib import Path

import torch
from transformers import DynamicCache

sys.path.insert(0, str(Path(__file__).resolve().parent))
import heads  # noqa: E402  (the patch: installed before the model builds its lean stack)

from hamburger.bench.machine import machine_info  # noqa: E402
from hamburger.core.loading import load_model, set_threads  # noqa: E402
from hamburger.core.lora import adapters_disabled  # noqa: E402
from hamburger.engine.folding import DEFAULT_FOLD, FoldState, parse_folding  # noqa: E402
from hamburger.engine.prompt import encode_prompt  # noqa: E402

HERE = Path(__file__).resolve().parent
ANSWERS = HERE.parent / "2026-11-28-on-policy" / "answers.jsonl.gz"
TAIL = 0.05  # the share of each answer's folded positions that make its tail


def gone_at(logits: torch.Tensor, answer: list[int], vocab: int) -> list[float]:
    """For each answer token, the answer index from which on a query no longer sees it (inf: never folds), replaying
    the default fold one token per forward. ``logits`` [A, V]: the distributions that chose the answer's tokens."""
    state = FoldState(parse_folding(DEFAULT_FOLD), vocab)
    gone = [float("inf")] * len(answer)
    state.chose(logits[:1], answer[:1])
    for a in range(len(answer)):
        for start, end in state.due(a):  # before the forward that feeds token a
            for j in state.leaving(start, end):
                gone[j] = a
        if a + 1 < len(answer):
            state.chose(logits[a + 1:a + 2], answer[a + 1:a + 2])
        state.fed(a, a + 1)
    return gone


def two_channel_mask(prompt: int, gone: list[float]) -> torch.Tensor:
    """[1, 2, T, T]: channel 0 what each position sees under the fold, channel 1 the causal mask."""
    total = prompt + len(gone)
    causal = torch.ones(total, total, dtype=torch.bool).tril()
    folded = causal.clone()
    g = torch.tensor(gone)
    a = torch.arange(len(gone))
    hidden = (g[None, :] <= a[:, None]) & (a[None, :] < a[:, None])  # answer query a no longer sees answer token j
    folded[prompt:, prompt:] &= ~hidden
    return torch.stack([folded, causal])[None]


def log_probs(model, lean, ids: torch.Tensor, mask: torch.Tensor, at: slice) -> torch.Tensor:
    """The base's next-token log-probabilities [positions ``at``, V] under ``mask``."""
    positions = torch.arange(ids.shape[1])[None]
    final, _ = lean(model.embed(ids), positions, mask, DynamicCache(config=model.base.config), taps=())
    return model.lm_head(final[0, at]).float().log_softmax(-1)


def kl(p_log: torch.Tensor, q_log: torch.Tensor) -> torch.Tensor:
    return (p_log.exp() * (p_log - q_log)).sum(-1)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--answers", type=int, default=20, help="answers to score (the first that are long enough)")
    parser.add_argument("--min-tokens", type=int, default=160, help="shortest answer scored (tokens)")
    parser.add_argument("--chosen", default="", help="a JSON list of [layer, kv head] to score together at the end")
    parser.add_argument("--chosen-only", action="store_true", help="score only the --chosen set (not each head)")
    parser.add_argument("--threads", type=int, default=2)
    args = parser.parse_args()
    set_threads(args.threads)
    heads.install()
    model, tokenizer, _ = load_model()
    lean = model._lean_stack()
    config = model.base.config
    units = [(layer, g) for layer in range(config.num_hidden_layers) for g in range(config.num_key_value_heads)]
    rows = [json.loads(line) for line in gzip.open(ANSWERS, "rt")]
    rows = [r for r in rows if len(json.loads(r["response_token_ids"]) if isinstance(r["response_token_ids"], str)
                                   else r["response_token_ids"]) >= args.min_tokens][:args.answers]
    print(json.dumps({"machine": machine_info(args.threads, "float32"), "fold": DEFAULT_FOLD, "answers": len(rows),
                      "source": ANSWERS.name}), flush=True)
    gains = {u: [] for u in units}
    tail_gains = {u: [] for u in units}
    chosen = [tuple(u) for u in json.loads(args.chosen)] if args.chosen else []
    together, together_tail, base_kl, base_tail = [], [], [], []
    started = time.time()
    with torch.inference_mode(), adapters_disabled(model.base):
        for n, r in enumerate(rows):
            answer = r["response_token_ids"]
            answer = json.loads(answer) if isinstance(answer, str) else answer
            prompt = encode_prompt(tokenizer, r["prompt"])
            ids = torch.tensor([prompt + answer])
            P = len(prompt)
            heads.set_full_heads([])
            full = log_probs(model, lean, ids, two_channel_mask(P, [float("inf")] * len(answer)), slice(P - 1, -1))
            gone = gone_at(full, answer, config.vocab_size)
            first = min(gone)
            if first == float("inf"):
                continue
            at = slice(P + int(first), P + len(answer) - 1)  # positions after the first fold (predicting the next)
            full = full[int(first) + 1:]  # (full's rows are positions P - 1 ...)
            mask = two_channel_mask(P, gone)
            folded_kl = kl(full, log_probs(model, lean, ids, mask, at))
            tail = folded_kl.topk(max(1, int(TAIL * len(folded_kl)))).indices
            base_kl.append(folded_kl.mean().item())
            base_tail.append(folded_kl[tail].mean().item())
            for u in ([] if args.chosen_only else units) + ([None] if chosen else []):
                heads.set_full_heads([u] if u is not None else chosen)
                got = kl(full, log_probs(model, lean, ids, mask, at))
                gain, tail_gain = (folded_kl - got).mean().item(), (folded_kl[tail] - got[tail]).mean().item()
                if u is None:
                    together.append(gain)
                    together_tail.append(tail_gain)
                else:
                    gains[u].append(gain)
                    tail_gains[u].append(tail_gain)
            print(f"answer {n + 1}/{len(rows)}: {len(answer)} tokens, folded KL {base_kl[-1]:.4f}, "
                  f"{time.time() - started:.0f} s", file=sys.stderr, flush=True)
    mean = lambda xs: sum(xs) / len(xs)  # noqa: E731
    print(json.dumps({"folded_kl": mean(base_kl), "folded_tail_kl": mean(base_tail), "answers": len(base_kl)}))
    for u in sorted(units, key=lambda u: -mean(gains[u])) if not args.chosen_only else []:
        print(json.dumps({"layer": u[0], "kv_head": u[1], "kl_gain": mean(gains[u]),
                          "tail_kl_gain": mean(tail_gains[u])}))
    if chosen:
        print(json.dumps({"chosen": chosen, "kl_gain": mean(together), "tail_kl_gain": mean(together_tail)}))


if __name__ == "__main__":
    main()
