"""Prototype (issue 19, session 15): let the micro-step decoder vote on the token after a merged group, and see why
merged groups end.

The first token after a merged group is chosen by log p_base + W * log p_msd, where p_msd is the MSD's
distribution for that position: from the micro step that ended the group by doubt, and with `extra` also from one
more micro step after a group the stop head ended (not after a group of max_steps). The rest is the engine's host
micro loop unchanged (the loop below is its copy plus the vote; W 0 is the engine's own decoding), decoding the 48
dev prompts of decode_fidelity.py (96 tokens, greedy, the shipped model with prefilter 0.75) and scoring them with
its `score`. It also records why every group ended: "doubt" (the MSD's probability of the next micro token fell
below the knob), "stop" (the stop head's prefilter), "max" (max_steps), "done"; and prints the first token after
each merged group by that reason: reads, % equal to the base's greedy choice, spikes (NLL > 5).

    python experiments/2026-11-25-msd-vote/vote.py W KNOB [extra]   # writes vote_W_KNOB[_extra].json here
"""
import sys, json, time
from pathlib import Path
import torch
HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
sys.path.insert(0, str(ROOT))
from transformers import DynamicCache
from hamburger.core.base import load_base
from hamburger.core.checkpoint import load_checkpoint
from hamburger.bench.prompts import category_prompts
from hamburger.engine.generate import Generation
from hamburger.engine.micro import HostMicroLoop
from hamburger.engine.sampling import DecodingConfig, choose_tokens
from benchmarks.decode_fidelity import score, summarise

W = float(sys.argv[1]); KNOB = float(sys.argv[2]); EXTRA = len(sys.argv) > 3 and sys.argv[3] == "extra"
STATS = {"mixed": 0, "changed": 0, "merged_groups": 0}

class VoteLoop(HostMicroLoop):
    def __call__(self, hidden, features, rows):
        model = self.model
        max_steps, m = model.config.max_steps, features.shape[1]
        for r in rows:
            r.group = []
        live = list(rows)
        msd_cache = DynamicCache()
        step = 0
        while True:
            logits = model.decode_logits(hidden).float()
            if step == 0 and W > 0:
                for b, r in enumerate(live):
                    v = getattr(r, "vote", None)
                    if v is not None:
                        mixed = logits[b].log_softmax(-1) + W * v
                        STATS["mixed"] += 1
                        STATS["changed"] += int(mixed.argmax() != logits[b].argmax())
                        logits[b] = mixed
                    r.vote = None
            tokens = choose_tokens(logits, [r.cfg for r in live], [r.generator for r in live])
            token_embeddings = model.embed(tokens)
            stop_logits = model.stop_head(hidden, token_embeddings).float()
            probs = logits.softmax(-1).gather(1, tokens[:, None])[:, 0]
            step += 1
            values = zip(live, tokens.tolist(), stop_logits.tolist(), torch.sigmoid(-stop_logits).tolist(), probs.tolist())
            keep = []
            for b, (row, t, s, c, p) in enumerate(values):
                if getattr(row, "vote_only", False):
                    row.vote_only = False
                    row.vote = logits[b].log_softmax(-1)
                    STATS["extra"] = STATS.get("extra", 0) + 1
                    continue
                if step > 1 and p < row.floor:
                    row.why = getattr(row, "why", []) + ["doubt"]
                    if len(row.group) > 1:
                        row.vote = logits[b].log_softmax(-1)
                        STATS["merged_groups"] += 1
                    continue
                row.take(t, p, c, self.eos, model.context_length)
                if not row.done and len(row.group) < max_steps and -s >= row.threshold:
                    keep.append(b)
                    continue
                row.why = getattr(row, "why", []) + ["done" if row.done else "max" if len(row.group) >= max_steps else "stop"]
                if EXTRA and W > 0 and not row.done and 1 < len(row.group) < max_steps:
                    row.vote_only = True
                    keep.append(b)
            if not keep:
                return None
            if len(keep) < len(live):
                index = torch.tensor(keep, device=tokens.device)
                features, token_embeddings = features[index], token_embeddings[index]
                msd_cache.batch_select_indices(index)
                live = [live[b] for b in keep]
            x = token_embeddings[:, None]
            if step == 1:
                x = torch.cat([features, x], 1)
            hidden = model.decoder(x, msd_cache, 0 if step == 1 else m + step - 1)[:, -1]

torch.set_num_threads(1)
texts = [p for c in "chat,math,code".split(",") for p in category_prompts(c, 8, seed=1)]
base, tokenizer, info = load_base(None, "float32"); base.eval()
from benchmarks import decode_fidelity as df
prompts = [df.encode_prompt(tokenizer, p["prompt"]) for p in texts]
model, _, _ = load_checkpoint(str(ROOT / "hamburger/default_model")); model.eval()
model.config.prefilter = 0.75
eos = df.eos_ids(model, tokenizer)
outs = []
whys = []
t0 = time.time()
with torch.no_grad():
    for i in range(0, len(prompts), 8):
        g = Generation(model, tokenizer, prompts[i:i+8], [DecodingConfig(96, confidence=KNOB)] * len(prompts[i:i+8]))
        g._micro = VoteLoop(model, list(g.eos), None)
        outs += g.run()
        whys += [r.why for r in g.rows]
    rows = [{"id": p["id"], "forwards": o.forwards, "rereads": 0, "kv_slots": o.kv_slots,
             "kv_slots_ordinary": o.kv_slots_ordinary, **score(base, ids, o.token_ids, o.groups, eos)}
            for p, ids, o in zip(texts, prompts, outs)]
s = summarise(rows)
print(f"W {W} knob {KNOB}: tau {s['tau']:.3f} nll {s['nll_per_token']:.3f} worst {s['worst_token_nll']:.2f} rep4 {s['rep4']:.3f} "
      f"micro_ok {s['micro_ok']:.3f} after_merge_ok {s['after_merge_ok']:.3f} ({s['after_merge_tokens']}) "
      f"after spikes {s['by_kind']['after_merge']['spikes']} mean {s['by_kind']['after_merge']['mean_nll']:.3f} {STATS} {time.time()-t0:.0f}s", flush=True)
from hamburger.bench.machine import machine_info
json.dump({"W": W, "knob": KNOB, "extra": EXTRA, "summary": s, "rows": rows, "stats": STATS, "machine": machine_info(1, "float32")}, open(HERE / f"vote_{W}_{KNOB}{'_extra' if EXTRA else ''}.json", "w"))

from hamburger.eval.plausibility import base_reading
tot = {}
for o, why, ids in zip(outs, whys, prompts):
    nll, greedy = base_reading(base, ids, o.token_ids)
    at = 0
    for i, n in enumerate(o.groups):
        if at >= len(o.token_ids): break
        if i and o.groups[i-1] > 1:
            k = why[i-1]
            t = tot.setdefault(k, [0, 0, 0])
            t[0] += 1; t[1] += o.token_ids[at] == greedy[at]; t[2] += nll[at] > 5
        at += n
print("  after a merged group that ended by: " + "; ".join(f"{k} {v[0]} reads, {100 * v[1] / v[0]:.1f}% own, {v[2]} spikes" for k, v in sorted(tot.items())), flush=True)
