"""Predicted outputs on the bundled model in verify mode (the server's default drafting: the MSD, prompt lookup and
the n-gram table), with and without the request's prediction, in two tasks.

For each of --prompts dev prompts (self_instruct and T0, the fixed dev split) the base first answers it (--max-tokens,
greedy). "edit": a request shows that answer and asks for it back with its spelling fixed (the text is in the prompt,
where prompt lookup finds it too), with the answer as its prediction. "again": the same question asked again, with the
earlier answer as the prediction (not in the prompt; greedy, the answer is the same: the most a prediction can give).
Each request runs without and with the prediction: both must be the same tokens (verify mode is lossless); the record
holds each one's tokens, base forwards, tokens per forward, seconds, and the prediction's drafts kept and refused.

    python experiments/2026-12-06-predicted-outputs/edit.py --out experiments/2026-12-06-predicted-outputs/edit.json
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
import hamburger  # noqa: E402,F401
from hamburger.bench.machine import machine_info  # noqa: E402
from hamburger.core.loading import load_model, set_threads  # noqa: E402
from hamburger.data.prompts import build_prompts  # noqa: E402
from hamburger.engine.lookup import LOOKUP_TOKENS, PromptLookup  # noqa: E402
from hamburger.engine.ngrams import model_ngrams  # noqa: E402
from hamburger.engine.prompt import encode_prompt  # noqa: E402
from hamburger.engine.sampling import DecodingConfig  # noqa: E402
from hamburger.engine.verify import VerifyGeneration, on_base  # noqa: E402

ASK = "Here is a text:\n\n{text}\n\nWrite the text again, exactly as it is, fixing only its spelling mistakes."


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--prompts", type=int, default=8)
    p.add_argument("--max-tokens", type=int, default=96)
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--out", required=True)
    args = p.parse_args()
    set_threads(args.threads)
    model, tok, _, reference = load_model(None, "float32", reference=True)
    model = on_base(model, reference)

    def run(ids: list[int], max_tokens: int, prediction: list[int] | None = None):
        cfg = DecodingConfig(max_new_tokens=max_tokens, prediction=prediction)
        engine = VerifyGeneration(model, tok, [ids], cfg, draft_vocab=model.draft_vocab,
                                  lookup=PromptLookup(tokens=LOOKUP_TOKENS), ngrams=model_ngrams(model, None))
        start = time.perf_counter()
        with torch.inference_mode():
            result = engine.run()[0]
        return result, time.perf_counter() - start

    rows = []
    for record in build_prompts(["self_instruct", "t0_prompts"], "dev", limit=args.prompts):
        question = encode_prompt(tok, record["prompt"])
        answer, _ = run(question, args.max_tokens)
        prediction = tok.encode(answer.text, add_special_tokens=False)
        for task, ids, most in (("edit", encode_prompt(tok, ASK.format(text=answer.text)), args.max_tokens + 32),
                                ("again", question, args.max_tokens)):
            plain, plain_s = run(ids, most)
            predicted, predicted_s = run(ids, most, prediction)
            rows.append({"task": task, "prompt": record["prompt"][:80],
                         "same_tokens": plain.token_ids == predicted.token_ids, "tokens": plain.tokens,
                         "forwards": [plain.forwards, predicted.forwards],
                         "tau": [round(plain.tau, 3), round(predicted.tau, 3)],
                         "seconds": [round(plain_s, 3), round(predicted_s, 3)],
                         "prediction_kept": predicted.accepted_prediction_tokens,
                         "prediction_refused": predicted.rejected_prediction_tokens})
            print(rows[-1], flush=True)
    summary = {}
    for task in ("edit", "again"):
        of = [r for r in rows if r["task"] == task]
        total = {k: [sum(r[k][i] for r in of) for i in (0, 1)] for k in ("forwards", "seconds")}
        tokens = sum(r["tokens"] for r in of)
        summary[task] = {"prompts": len(of), "all_same_tokens": all(r["same_tokens"] for r in of), "tokens": tokens,
                         "tokens_per_forward": [round(tokens / f, 3) for f in total["forwards"]],
                         "tokens_per_s": [round(tokens / s, 2) for s in total["seconds"]],
                         "speedup": round(total["seconds"][0] / total["seconds"][1], 3),
                         "prediction_kept": sum(r["prediction_kept"] for r in of),
                         "prediction_refused": sum(r["prediction_refused"] for r in of)}
    record = {"experiment": "predicted outputs: an edit, and a question asked again", "settings": vars(args),
              "columns": "[verify mode as the server drafts, the same with the prediction]",
              "machine": machine_info(args.threads, "float32"), "summary": summary, "rows": rows}
    Path(args.out).write_text(json.dumps(record, indent=1) + "\n")
    print(json.dumps(summary))


if __name__ == "__main__":
    main()
