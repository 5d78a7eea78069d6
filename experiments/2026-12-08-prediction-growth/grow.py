"""Predicted outputs with drafts that grow while they are all kept (`engine/prediction.py`) against the fixed 10 of
sessions 79-88, on the bundled model in verify mode as the server drafts (the MSD, prompt lookup, the n-gram table).

For each of --prompts dev prompts (self_instruct and T0, the fixed dev split) the base first answers it (--max-tokens,
greedy). Two tasks, as in ../2026-12-06-predicted-outputs/edit.py: "edit" shows that answer and asks for it back with
its spelling fixed, the answer as the prediction (the text is in the prompt: prompt lookup finds it too); "again" asks
the same question again, the earlier answer as the prediction. Each request runs in three arms, in an order that
rotates prompt by prompt: no prediction ("plain"), drafts of at most 10 ("fixed"), drafts of 10 doubling to 64
("grow"). All three must give the same tokens (verify mode is lossless); the record holds each run's base forwards,
seconds, and the prediction's drafts kept and refused.

    python experiments/2026-12-08-prediction-growth/grow.py --out experiments/2026-12-08-prediction-growth/grow.json
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from functools import partial
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
import hamburger  # noqa: E402,F401
from hamburger.bench.machine import machine_info  # noqa: E402
from hamburger.core.loading import load_model, set_threads  # noqa: E402
from hamburger.data.prompts import build_prompts  # noqa: E402
from hamburger.engine import verify  # noqa: E402
from hamburger.engine.lookup import LOOKUP_TOKENS, PromptLookup  # noqa: E402
from hamburger.engine.ngrams import model_ngrams  # noqa: E402
from hamburger.engine.prediction import PREDICTION_MOST, PREDICTION_TOKENS, Prediction  # noqa: E402
from hamburger.engine.prompt import encode_prompt  # noqa: E402
from hamburger.engine.sampling import DecodingConfig  # noqa: E402

ASK = "Here is a text:\n\n{text}\n\nWrite the text again, exactly as it is, fixing only its spelling mistakes."
ARMS = {"plain": None, "fixed": PREDICTION_TOKENS, "grow": PREDICTION_MOST}  # the most tokens a step drafts from it


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--prompts", type=int, default=12)
    p.add_argument("--max-tokens", type=int, default=256)
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--out", required=True)
    args = p.parse_args()
    set_threads(args.threads)
    model, tok, _, reference = load_model(None, "float32", reference=True)
    model = verify.on_base(model, reference)

    def run(ids: list[int], max_tokens: int, prediction: list[int] | None = None, most: int = PREDICTION_MOST):
        verify.Prediction = partial(Prediction, most=most)
        cfg = DecodingConfig(max_new_tokens=max_tokens, prediction=prediction)
        engine = verify.VerifyGeneration(model, tok, [ids], cfg, draft_vocab=model.draft_vocab,
                                         lookup=PromptLookup(tokens=LOOKUP_TOKENS), ngrams=model_ngrams(model, None))
        start = time.perf_counter()
        with torch.inference_mode():
            result = engine.run()[0]
        return result, time.perf_counter() - start

    rows, names = [], list(ARMS)
    for n, record in enumerate(build_prompts(["self_instruct", "t0_prompts"], "dev", limit=args.prompts)):
        question = encode_prompt(tok, record["prompt"])
        answer, _ = run(question, args.max_tokens)
        prediction = tok.encode(answer.text, add_special_tokens=False)
        for task, ids, most_tokens in (("edit", encode_prompt(tok, ASK.format(text=answer.text)),
                                        args.max_tokens + 32), ("again", question, args.max_tokens)):
            order = names[n % 3:] + names[:n % 3]
            got = {arm: run(ids, most_tokens, prediction if ARMS[arm] else None, ARMS[arm] or PREDICTION_MOST)
                   for arm in order}
            first = got["plain"][0]
            rows.append({"task": task, "prompt": record["prompt"][:80], "order": order, "tokens": first.tokens,
                         "same_tokens": all(r.token_ids == first.token_ids for r, _ in got.values()),
                         **{arm: {"forwards": r.forwards, "seconds": round(s, 3),
                                  "kept": r.accepted_prediction_tokens, "refused": r.rejected_prediction_tokens}
                            for arm, (r, s) in got.items()}})
            print(rows[-1], flush=True)
    summary = {}
    for task in ("edit", "again"):
        of = [r for r in rows if r["task"] == task]
        tokens = sum(r["tokens"] for r in of)
        summary[task] = {"prompts": len(of), "all_same_tokens": all(r["same_tokens"] for r in of), "tokens": tokens}
        for arm in ARMS:
            forwards, seconds = (sum(r[arm][k] for r in of) for k in ("forwards", "seconds"))
            summary[task][arm] = {"tokens_per_forward": round(tokens / forwards, 3),
                                  "tokens_per_s": round(tokens / seconds, 2),
                                  "kept": sum(r[arm]["kept"] for r in of),
                                  "refused": sum(r[arm]["refused"] for r in of),
                                  "per_prompt_speedup_over_fixed": sorted(
                                      round(r["fixed"]["seconds"] / r[arm]["seconds"], 3) for r in of)}
    record = {"experiment": "predicted outputs: drafts that grow while kept, against a fixed 10",
              "settings": vars(args), "arms": ARMS, "machine": machine_info(args.threads, "float32"),
              "summary": summary, "rows": rows}
    Path(args.out).write_text(json.dumps(record, indent=1) + "\n")
    print(json.dumps(summary, indent=1))


if __name__ == "__main__":
    main()
