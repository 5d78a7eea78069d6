"""What tool choice "auto"'s grammar (`serve/tools.py`, `Tools.grammar`) does to answers that write no call, on the
default model (fp32, 2 threads, lossless verify: the server's default mode): 6 dev chat prompts with one tool in the
system message (as the server gives a template that does not render tools), answered in one batch up to 48 tokens,
greedy and sampled (T 0.8, seed 1), without the grammar and with it; REPS alternated runs, median seconds.

    python experiments/2026-12-06-auto-tool-grammar/same.py > experiments/2026-12-06-auto-tool-grammar/same.json
"""

import json
import statistics
import time

import torch

import hamburger  # noqa: F401  (its MKL setting, before torch's first product)
from hamburger.bench.machine import machine_info
from hamburger.bench.prompts import category_prompts
from hamburger.core.loading import load_model
from hamburger.engine.prompt import encode_prompt
from hamburger.engine.sampling import DecodingConfig
from hamburger.engine.verify import VerifyGeneration, on_base
from hamburger.serve.tools import parse_tools

PROMPTS, TOKENS, REPS = 6, 48, 3
TOOL = {"type": "function", "function": {"name": "get_weather", "description": "The weather in a city", "parameters": {
    "type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}}}


def main() -> None:
    torch.set_num_threads(2)
    model, tokenizer, _, reference = load_model(None, "float32", reference=True)
    verifier = on_base(model, reference)
    tools = parse_tools({"tools": [TOOL], "tool_choice": "auto"})
    prompts = [encode_prompt(tokenizer, [{"role": "system", "content": tools.system_note()},
                                         {"role": "user", "content": c["prompt"]}])
               for c in category_prompts("chat", PROMPTS, seed=2)]
    rows = []
    for temperature in (0.0, 0.8):
        plain = DecodingConfig(max_new_tokens=TOKENS, temperature=temperature, seed=1)
        held = DecodingConfig(max_new_tokens=TOKENS, temperature=temperature, seed=1, grammar=tools.grammar())
        times, answers = {"free": [], "grammar": []}, {}
        for _ in range(REPS):
            for name, config in (("free", plain), ("grammar", held)):
                start = time.perf_counter()
                answers[name] = VerifyGeneration(verifier, tokenizer, prompts, [config] * len(prompts)).run()
                times[name].append(time.perf_counter() - start)
        rows.append({"temperature": temperature,
                     "same_tokens": [a.token_ids == b.token_ids for a, b in zip(answers["free"], answers["grammar"])],
                     "calls_written": sum("<tool_call>" in a.text for a in answers["grammar"]),
                     "seconds": {k: round(statistics.median(v), 2) for k, v in times.items()}})
    print(json.dumps({"benchmark": "auto_tool_grammar", "machine": machine_info(2, "float32"), "prompts": PROMPTS,
                      "max_new_tokens": TOKENS, "reps": REPS, "runs": rows}, indent=1))


if __name__ == "__main__":
    main()
