"""Verify mode under a JSON schema: drafting the tokens the schema forces (its keys, quotes, commas) beside the MSD's,
against the MSD's drafts alone, on the default model (lossless verify on the unchanged base, greedy, fp32, 2 threads,
the draw paused). 8 dev chat prompts asking for JSON, a schema of three fields, 96 new tokens at most, batch 1.
Per arm: tokens per base forward (tau) and ms per decoded token, pooled over the prompts; 3 runs alternated, the median
time; and whether the two arms give the same answers (they must: both are the base's masked greedy answer).

    python experiments/2026-12-06-serving-extras/json_drafts.py > experiments/2026-12-06-serving-extras/json_drafts.json
"""

import json
import statistics

import torch

import hamburger  # noqa: F401  (its MKL setting, before torch's first product)
from hamburger.bench.machine import machine_info
from hamburger.bench.prompts import category_prompts
from hamburger.core.loading import load_model
from hamburger.engine.grammar import Grammar
from hamburger.engine.prompt import encode_prompt
from hamburger.engine.sampling import DecodingConfig
from hamburger.engine.verify import VerifyGeneration, on_base

SCHEMA = {"type": "object", "additionalProperties": False, "required": ["topic", "answer", "confident"],
          "properties": {"topic": {"type": "string", "maxLength": 24}, "answer": {"type": "string", "maxLength": 160},
                         "confident": {"type": "boolean"}}}
ASK = "\n\nAnswer in JSON with the fields topic, answer and confident."
FORCED = Grammar.forced


def run(model, tokenizer, prompts, forced: bool) -> tuple[list, float]:
    """(the results, seconds of decoding) of every prompt, one at a time."""
    Grammar.forced = FORCED if forced else (lambda self: [])
    results = [VerifyGeneration(model, tokenizer, [ids], DecodingConfig(max_new_tokens=96, json_schema=SCHEMA)).run()[0]
               for ids in prompts]
    return results, sum(r.decode_s for r in results)


def main() -> None:
    torch.set_num_threads(2)
    model, tokenizer, _, reference = load_model(None, "float32", reference=True)
    verifier = on_base(model, reference)
    prompts = [encode_prompt(tokenizer, [{"role": "user", "content": p["prompt"] + ASK}])
               for p in category_prompts("chat", 8)]
    times, answers = {"forced_drafts": [], "msd_only": []}, {}
    for _ in range(3):
        for name in times:
            results, seconds = run(verifier, tokenizer, prompts, name == "forced_drafts")
            times[name].append(seconds)
            answers[name] = results
    Grammar.forced = FORCED
    out = {"machine": machine_info(2, "float32"), "prompts": len(prompts), "schema": SCHEMA}
    for name, results in answers.items():
        tokens, forwards = sum(r.tokens for r in results), sum(r.forwards for r in results)
        decoded = sum(r.tokens - r.groups[0] for r in results)
        out[name] = {"tokens": tokens, "forwards": forwards, "tau": round(tokens / forwards, 3),
                     "ms_per_token": round(1000 * statistics.median(times[name]) / decoded, 2),
                     "valid_json": sum(_valid(r.text) for r in results)}
    out["same_answers"] = [r.token_ids for r in answers["forced_drafts"]] == [r.token_ids for r in answers["msd_only"]]
    out["example"] = answers["forced_drafts"][0].text
    print(json.dumps(out, indent=1))


def _valid(text: str) -> bool:
    try:
        return set(json.loads(text)) == {"topic", "answer", "confident"}
    except ValueError:
        return False


if __name__ == "__main__":
    main()
