"""Stage 6 (README.md), a measurement: where verify_fold's extra time goes at batch 8, op by op. Stage 5's engine
work (16 dev prompts, greedy, 128 new tokens, the server's CPU drafting, continuous batching of up to 8 rows) in one
process under `torch.profiler`, in the mode given; its table of ops by self CPU time.

    python op_profile.py verify > op-profile-verify.txt; python op_profile.py verify_fold > op-profile-verify_fold.txt
"""

import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
import torch
from torch.profiler import profile, ProfilerActivity
from benchmarks.load_test import prompts
from hamburger.core.loading import fold_model, load_model
from hamburger.engine.folding import DEFAULT_FOLD, parse_folding
from hamburger.engine.lookup import PromptLookup
from hamburger.engine.ngrams import model_ngrams
from hamburger.engine.prompt import encode_prompt
from hamburger.engine.sampling import DecodingConfig
from hamburger.engine.verify import VerifyGeneration, on_base
from hamburger.serve.server import CPU_DRAFT_ROWS
torch.set_num_threads(2)
model, tokenizer, _, reference = load_model(None, reference=True)
folding = parse_folding(DEFAULT_FOLD)
models = {"verify": (on_base(model, reference), None), "verify_fold": (fold_model(None, folding, model), folding)}
ids = [encode_prompt(tokenizer, [{"role": "user", "content": t}]) for t in prompts(16, "dev")]
ngrams, cfg = model_ngrams(model, None), DecodingConfig(max_new_tokens=128)
def serve(mode, batch, pids):
    m, fold = models[mode]
    waiting, run = list(range(len(pids))), None
    first = [waiting.pop(0) for _ in range(min(batch, len(waiting)))]
    def poll():
        while waiting and run.active_rows < batch:
            run.add(pids[waiting.pop(0)], cfg)
    run = VerifyGeneration(m, tokenizer, [pids[i] for i in first], [cfg]*len(first), draft_vocab=m.draft_vocab, fold=fold,
        lookup=PromptLookup(), ngrams=ngrams, draft_rows=CPU_DRAFT_ROWS, poll=poll)
    for e in run:
        if e.finish_reason is not None:
            run.release(e.row)
serve("verify", 2, ids[:2])
mode = sys.argv[1]
with profile(activities=[ProfilerActivity.CPU]) as prof:
    t = time.perf_counter(); serve(mode, 8, ids); w = time.perf_counter() - t
from hamburger.bench.machine import machine_info
print(mode, "wall", round(w, 2), machine_info(2, "float32"))
print(prof.key_averages().table(sort_by="self_cpu_time_total", row_limit=30, max_name_column_width=48))
