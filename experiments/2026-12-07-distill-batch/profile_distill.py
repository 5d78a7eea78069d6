"""Where the CPU's sampled draw spends its time: `distill.generate_batch` on 32 prompts (draw 4's prompts 3490-3521)
at temperature 0.7, top-p 0.9, with PyTorch's scaled-dot-product attention ("sdpa", transformers' default) and with
its "eager" attention, in bf16 and fp32; then the operators of one bf16 sdpa run by self CPU time. Stop (kill -STOP)
the background draw first.
    .venv/bin/python experiments/2026-12-07-distill-batch/profile_distill.py > \
        experiments/2026-12-07-distill-batch/profile-HOST.txt
"""

import json
import platform
import time
from pathlib import Path

import torch
import transformers

from hamburger.core.base import load_base
from hamburger.data.distill import DistillSettings, generate_batch
from hamburger.engine.prompt import chat_prompt_ids, eos_ids

ROOT = Path(__file__).resolve().parents[2]
NEW_TOKENS = 128


def main() -> None:
    torch.set_num_threads(2)
    flags = open("/proc/cpuinfo").read().split("flags")[1].split("\n")[0].split()
    print(f"cpu: {platform.processor() or platform.machine()}, vector extensions: "
          f"{' '.join(f for f in ('avx2', 'avx512f', 'avx512_bf16', 'amx_bf16') if f in flags)}")
    print(f"torch {torch.__version__}, transformers {transformers.__version__}, 2 threads, batch 32, "
          f"{NEW_TOKENS} new tokens")
    lines = (ROOT / "data/prompts/train-sampled-s4.jsonl").read_text().splitlines()[3489:3521]
    for dtype in ("bfloat16", "float32"):
        model, tok, _ = load_base(None, dtype)
        prompts = [chat_prompt_ids(tok, json.loads(line)["prompt"]) for line in lines]
        settings = DistillSettings(max_new_tokens=NEW_TOKENS, temperature=0.7, top_p=0.9, seed=1, dtype=dtype)
        for attention in ("sdpa", "eager"):
            model.set_attn_implementation(attention)
            start = time.perf_counter()
            out = generate_batch(model, prompts, eos_ids(model, tok), tok.pad_token_id, settings)
            seconds, tokens = time.perf_counter() - start, sum(len(ids) for ids, _, _ in out)
            print(f"{dtype} {attention}: {seconds:.1f} s, {tokens} response tokens, {tokens / seconds:.1f} tokens/s")
        if dtype == "bfloat16":
            model.set_attn_implementation("sdpa")
            with torch.profiler.profile() as prof:
                generate_batch(model, prompts, eos_ids(model, tok), tok.pad_token_id, settings)
            table = prof.key_averages().table(sort_by="self_cpu_time_total", row_limit=12)
    print("bfloat16 sdpa, operators by self CPU time:")
    print(table)


if __name__ == "__main__":
    main()
