"""Function calling on the default model (fp32, 2 threads, the draw paused): what a call costs and what the model
calls, with the prompt the server builds (`serve/tools.py`: SmolLM2's template ignores `tools`, so they go in the
system message).

Twelve requests written for this run (a workload, not a test set: nothing is tuned on it), each with the tool a person
would call, over four tools. Each is asked with `tool_choice` "required" (one call: `parallel_tool_calls` false) and
with the intended function named (its arguments alone), greedy, up to 96 tokens, decoded two ways, alternated, 3 times
each: the base's own decoding (the reference base, one token per forward) and lossless verify mode (the server's
default; the schema's forced text, such as `[{"name":"`, is drafted and checked in one forward). Per request and way:
the tokens, the base forwards, the median wall time, the call made; whether verify's tokens equal the base's.

    python experiments/2026-12-06-tool-calls/calls.py > experiments/2026-12-06-tool-calls/calls.json
"""

import json
import statistics
import sys
import time
from dataclasses import replace

import torch

import hamburger  # noqa: F401  (its MKL setting, before torch's first product)
from hamburger.bench.machine import machine_info
from hamburger.core.loading import load_model
from hamburger.engine.generate import generate
from hamburger.engine.prompt import encode_prompt
from hamburger.engine.sampling import DecodingConfig
from hamburger.engine.verify import VerifyGeneration, on_base
from hamburger.serve.tools import Conversation, parse_tools

MAX_TOKENS, REPS = 96, 3


def function(name: str, description: str, properties: dict, required: list[str]) -> dict:
    return {"type": "function", "function": {"name": name, "description": description, "parameters": {
        "type": "object", "properties": properties, "required": required, "additionalProperties": False}}}


TEXT = {"type": "string"}
TOOLS = [
    function("get_weather", "The current weather in a city", {"city": TEXT, "unit": {"enum": ["celsius", "fahrenheit"]}},
             ["city"]),
    function("calculate", "Evaluate an arithmetic expression", {"expression": TEXT}, ["expression"]),
    function("search_web", "Search the web and return the top results", {"query": TEXT}, ["query"]),
    function("send_email", "Send an email", {"to": TEXT, "subject": TEXT, "body": TEXT}, ["to", "subject", "body"]),
]
REQUESTS = [
    ("What's the weather like in Lisbon right now?", "get_weather"),
    ("Is it cold in Oslo today? Give me Fahrenheit.", "get_weather"),
    ("Should I take an umbrella in Tokyo this afternoon?", "get_weather"),
    ("What is 1234 times 5678?", "calculate"),
    ("Compute the square root of 2 plus 17 divided by 3.", "calculate"),
    ("How much is 15% of 240?", "calculate"),
    ("Find recent news about the James Webb telescope.", "search_web"),
    ("Who won the 2022 football world cup? Look it up.", "search_web"),
    ("Search for a good recipe for banana bread.", "search_web"),
    ("Email bob@example.com that the meeting moves to 3pm.", "send_email"),
    ("Send my landlord (jane@example.org) a note that the rent is paid.", "send_email"),
    ("Write to team@example.com: the release is ready, subject 'v2 ready'.", "send_email"),
]


def decode(way: str, models: dict, tokenizer, ids: list[int], schema: dict):
    cfg = DecodingConfig(max_new_tokens=MAX_TOKENS, json_schema=schema)
    start = time.perf_counter()
    if way == "base":
        r = generate(models["base"], tokenizer, ids, replace(cfg, confidence=1.0))
    else:
        r = VerifyGeneration(models["verify"], tokenizer, [ids], [cfg]).run()[0]
    return r, time.perf_counter() - start


def main() -> None:
    torch.set_num_threads(2)
    model, tokenizer, _, reference = load_model(None, "float32", reference=True)
    models = {"base": reference, "verify": on_base(model, reference)}
    rows = []
    for text, intended in REQUESTS:
        messages = [{"role": "user", "content": text}]
        for choice in ("required", {"type": "function", "function": {"name": intended}}):
            spec = parse_tools({"tools": TOOLS, "tool_choice": choice, "parallel_tool_calls": False})
            ids = encode_prompt(tokenizer, Conversation.of(messages, spec, tokenizer).messages)
            runs = {"base": [], "verify": []}
            for _ in range(REPS):
                for way in runs:
                    runs[way].append(decode(way, models, tokenizer, ids, spec.schema()))
            base = runs["base"][0][0]
            content, calls = spec.calls(base.text)
            rows.append({
                "request": text, "intended": intended, "choice": spec.choice, "prompt_tokens": len(ids),
                "calls": [c["function"] for c in calls], "content": content, "finish": base.finish_reason,
                "named_intended": bool(calls) and calls[0]["function"]["name"] == intended,
                "same_tokens": all(r.token_ids == base.token_ids for way in runs for r, _ in runs[way]),
                **{way: {"tokens": len(v[0][0].token_ids), "forwards": v[0][0].forwards,
                         "ms": round(1000 * statistics.median(s for _, s in v), 1)} for way, v in runs.items()}})
            print(json.dumps(rows[-1]), flush=True, file=sys.stderr)
    summary = {}
    for choice in ("required", "named"):
        mine = [r for r in rows if (r["choice"] == "required") == (choice == "required")]
        summary[choice] = {
            "requests": len(mine), "intended_function": sum(r["named_intended"] for r in mine),
            "same_tokens": sum(r["same_tokens"] for r in mine),
            **{f"{way}_{k}": sum(r[way][k] for r in mine) for way in ("base", "verify") for k in ("tokens", "forwards",
                                                                                                  "ms")}}
        summary[choice]["verify_speedup"] = round(summary[choice]["base_ms"] / summary[choice]["verify_ms"], 2)
    print(json.dumps({"machine": machine_info(2, "float32"), "max_tokens": MAX_TOKENS, "reps": REPS,
                      "tools": TOOLS, "summary": summary, "rows": rows}, indent=1))


if __name__ == "__main__":
    main()
