"""How often a stop-head prefilter would skip the MSD, and how many merges it would turn down: the shipped model v2
decodes the 48 dev prompts of decode_fidelity (chat, math, code, 16 each, seed 1; greedy, batch 8, 96 new tokens)
with its token_prob gate and no prefilter, at knobs 0.8 and 0.9. For every group, the stop head's 1 - p_stop after
its first token is what a prefilter compares; a prefilter q skips the MSD at groups where it is below q, and loses
the merged groups (2+ tokens) among them. Read on one decode: a real prefilter changes the answers after the first
group it ends (decode_fidelity.json has those decodes).

    python benchmarks/results/prefilter/stop_head_shares.py > benchmarks/results/prefilter/stop_head_shares.txt
"""
import torch

from hamburger.bench.prompts import category_prompts
from hamburger.core.checkpoint import load_checkpoint
from hamburger.engine.generate import Generation
from hamburger.engine.prompt import encode_prompt
from hamburger.engine.sampling import DecodingConfig

torch.set_num_threads(1)
model, tokenizer, _ = load_checkpoint("hamburger/default_model")
model.eval()
texts = [p for c in ("chat", "math", "code") for p in category_prompts(c, 16, seed=1)]
prompts = [encode_prompt(tokenizer, p["prompt"]) for p in texts]
for knob in (0.8, 0.9):
    pairs = []  # (1 - p_stop after the group's first token, group length)
    for i in range(0, len(prompts), 8):
        batch = prompts[i:i + 8]
        for out in Generation(model, tokenizer, batch, [DecodingConfig(96, confidence=knob)] * len(batch)).run():
            at = 0
            for n in out.groups:
                pairs.append((out.p_continue[at], n))
                at += n
    merged = [p for p, n in pairs if n > 1]
    print(f"knob {knob}: {len(pairs)} groups, {len(merged)} merged", flush=True)
    for q in (0.05, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7):
        skipped = sum(p < q for p, _ in pairs) / len(pairs)
        lost = sum(p < q for p in merged) / max(1, len(merged))
        print(f"  prefilter {q}: MSD skipped at {skipped:.1%} of groups, merges lost {lost:.1%}", flush=True)
