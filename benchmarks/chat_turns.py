"""A multi-turn chat through `hamburger serve` and the official openai client, by `--prompt-cache`.

One server per setting (the bundled model unless --model), both up at once and idle but for the conversation
sent to one of them. Each conversation asks --turns dev chat prompts in turn (--reps conversations, other prompts each),
streamed, each turn's messages the whole conversation so far (the replies as the server wrote them); every
conversation goes to each server in turn. Per turn: the time to the first streamed content (TTFT, the client's view: HTTP, template, tokenizer and the
prompt's reading), the prompt tokens and `usage.prompt_tokens_details.cached_tokens`, and whether every server wrote
the same replies.

    python benchmarks/chat_turns.py --prompt-cache 0 256 --out benchmarks/results/chat-turns/results.json
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from contextlib import ExitStack
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from benchmarks.serve_process import serving, write_record  # noqa: E402


def conversation(client, questions: list[str], max_tokens: int, mode: str) -> list[dict]:
    """Each turn's (TTFT s, prompt tokens, cached tokens, reply) of one streamed conversation asking ``questions``."""
    messages, turns = [], []
    for question in questions:
        messages.append({"role": "user", "content": question})
        sent, first, reply, usage = time.perf_counter(), None, "", None
        stream = client.chat.completions.create(model="hamburger", messages=messages, max_tokens=max_tokens,
                                                stream=True, stream_options={"include_usage": True},
                                                extra_body={"mode": mode})
        for chunk in stream:
            if chunk.choices and chunk.choices[0].delta.content:
                first = first or time.perf_counter()
                reply += chunk.choices[0].delta.content
            if chunk.usage is not None:
                usage = chunk.usage
        turns.append({"ttft_s": (first or time.perf_counter()) - sent, "prompt_tokens": usage.prompt_tokens,
                      "cached_tokens": usage.prompt_tokens_details.cached_tokens, "reply": reply})
        messages.append({"role": "assistant", "content": reply})
    return turns


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--model", help="checkpoint folder (default: the bundled model)")
    parser.add_argument("--prompt-cache", type=float, nargs="+", default=[0, 256], help="settings (MiB) to compare")
    parser.add_argument("--mode", default="verify", help="the requests' decoding mode (default: serve's, verify)")
    parser.add_argument("--turns", type=int, default=8, help="user turns: dev chat prompts (default 8)")
    parser.add_argument("--reps", type=int, default=3, help="conversations per setting, alternated (default 3)")
    parser.add_argument("--max-tokens", type=int, default=64)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--dtype", default="float32")
    parser.add_argument("--out", default=None, help="write the JSON record here")
    args = parser.parse_args()
    import openai

    from hamburger.bench.machine import machine_info
    from hamburger.bench.prompts import category_prompts

    prompts = [p["prompt"] for p in category_prompts("chat", args.turns * args.reps)]
    tmp = tempfile.TemporaryDirectory()
    ckpt = Path(args.model) if args.model else None
    runs: dict[str, list[list[dict]]] = {str(mib): [] for mib in args.prompt_cache}
    with ExitStack() as stack:
        clients = {}
        for mib in args.prompt_cache:
            server_args = ["--threads", str(args.threads), "--dtype", args.dtype, "--prompt-cache", str(mib)]
            url, _ = stack.enter_context(serving(ckpt, Path(tmp.name) / f"server-{mib}.log", *server_args))
            clients[str(mib)] = openai.OpenAI(base_url=url + "/v1", api_key="none", timeout=600)
        for rep in range(args.reps):
            questions = prompts[rep * args.turns:(rep + 1) * args.turns]
            for name, client in clients.items():
                runs[name].append(conversation(client, questions, args.max_tokens, args.mode))
                total = sum(t["ttft_s"] for t in runs[name][-1])
                print(f"--prompt-cache {name}, conversation {rep + 1}: TTFT {total:.2f} s in all", flush=True)
    results = {"same_replies": all([t["reply"] for t in conv] == [t["reply"] for t in runs[first][k]]
                                   for first in [next(iter(runs))] for convs in runs.values()
                                   for k, conv in enumerate(convs)),
               "conversations": {name: [{"ttft_total_ms": round(1000 * sum(t["ttft_s"] for t in c), 1),
                                         "ttft_ms": [round(1000 * t["ttft_s"], 1) for t in c],
                                         "prompt_tokens": [t["prompt_tokens"] for t in c],
                                         "cached_tokens": [t["cached_tokens"] for t in c]} for c in convs]
                                 for name, convs in runs.items()}}
    record = {"benchmark": "chat_turns", "model": str(ckpt or "bundled default"),
              "settings": {k: v for k, v in vars(args).items() if k not in ("model", "out")},
              "machine": machine_info(args.threads, args.dtype), "results": results}
    write_record(args.out, record)
    tmp.cleanup()


if __name__ == "__main__":
    main()
