"""Self-distillation: the base model writes a response to every prompt of a prompt file.

Responses come from HF ``generate`` on the chat-formatted prompt (``apply_chat_template`` with the
generation prompt), greedy by default, stopping at every EOS id of the model's generation config or at
``--max-new-tokens``. Batches are left-padded; pending prompts are sorted by (source, prompt length)
within windows of 16 batches so rows of a batch are alike, and generation runs in chunks of 32 tokens
between which finished rows are dropped from the batch and its KV cache.

Output: one jsonl row per prompt, appended (flush + fsync) after every batch: ``id``, ``prompt``,
``response`` (text, no EOS), ``response_token_ids`` (no EOS), ``finish_reason`` ("eos" | "length"),
``stop_token_id`` (the EOS id that ended it, or null), ``n_prompt_tokens``, ``base_fingerprint``, plus
the other fields of the prompt record (``source``, ``reference``, ``answer``...). The base and the
generation settings live in a sidecar ``OUT.meta.json``.

Resuming: run the same command again. Ids already in OUT are skipped; a truncated last line (from a
kill) is cut off; a resume with another base fingerprint or other settings is refused.

Sharding (torchrun or any launcher that sets RANK and WORLD_SIZE): rank r takes the prompts whose
index i (after --limit) has ``i % WORLD_SIZE == r`` and writes ``OUT.rank{r}`` (+ its meta). Join with
``cat OUT.rank* > OUT && cp OUT.rank0.meta.json OUT.meta.json`` (the meta files of all ranks are equal).
"""

from __future__ import annotations

import hashlib
import os
import sys
import time
from dataclasses import asdict, dataclass
from pathlib import Path

import torch

from hamburger.data.io import append_jsonl, check_meta, read_jsonl, row_ids, shard_info, shard_path
from hamburger.engine.prompt import chat_prompt_ids, eos_ids
from hamburger.errors import HamburgerError

SORT_WINDOW_BATCHES = 16
CHUNK_TOKENS = 32


@dataclass(frozen=True)
class DistillSettings:
    """Everything that changes what the base writes; a resume must use the same values."""

    max_new_tokens: int = 256
    temperature: float = 0.0
    top_p: float = 1.0
    seed: int = 0
    system: str | None = None
    dtype: str = "float32"
    prompt_field: str = "prompt"


# ---------------------------------------------------------------- generation
def generate_batch(model, prompts: list[list[int]], eos: list[int], pad_id: int, settings: DistillSettings,
                   chunk: int = CHUNK_TOKENS) -> list[tuple[list[int], str, int | None]]:
    """(response ids without EOS, finish reason, stop id) per prompt; finished rows leave the batch early."""
    from transformers import DynamicCache, GenerationConfig

    width = max(map(len, prompts))
    ids = torch.tensor([[pad_id] * (width - len(p)) + p for p in prompts], device=model.device)
    mask = torch.tensor([[0] * (width - len(p)) + [1] * len(p) for p in prompts], device=model.device)
    sample = settings.temperature > 0
    cfg = dict(do_sample=sample, temperature=settings.temperature if sample else None,
               top_p=settings.top_p if sample else None, top_k=None, eos_token_id=eos, pad_token_id=pad_id,
               bos_token_id=None, return_dict_in_generate=True)
    out: list[list[int]] = [[] for _ in prompts]
    finish: list[str | None] = [None] * len(prompts)
    stop: list[int | None] = [None] * len(prompts)
    active, cache, produced, eos_set = list(range(len(prompts))), DynamicCache(config=model.config), 0, set(eos)
    with torch.inference_mode():
        while active and produced < settings.max_new_tokens:
            step = min(chunk, settings.max_new_tokens - produced)
            res = model.generate(input_ids=ids, attention_mask=mask, past_key_values=cache,
                                 generation_config=GenerationConfig(max_new_tokens=step, **cfg))
            new = res.sequences[:, ids.shape[1]:]
            produced += new.shape[1]
            keep = []
            for j, row in enumerate(active):
                for t in new[j].tolist():
                    if t in eos_set:
                        finish[row], stop[row] = "eos", t
                        break
                    out[row].append(t)
                if finish[row] is None:
                    keep.append(j)
            ids, cache = res.sequences, res.past_key_values
            mask = torch.cat([mask, mask.new_ones(mask.shape[0], new.shape[1])], dim=1)
            if len(keep) < len(active):
                sel = torch.tensor(keep, dtype=torch.long, device=ids.device)
                ids, mask, active = ids[sel], mask[sel], [active[j] for j in keep]
                if keep:
                    cache.batch_select_indices(sel)
    return [(o, f or "length", s) for o, f, s in zip(out, finish, stop)]


def _batches(pending: list[tuple[dict, list[int]]], batch_size: int):
    window = batch_size * SORT_WINDOW_BATCHES
    for w in range(0, len(pending), window):
        part = sorted(pending[w:w + window], key=lambda x: (str(x[0].get("source", "")), len(x[1])))
        yield from (part[i:i + batch_size] for i in range(0, len(part), batch_size))


def distill(prompts: str | os.PathLike, out: str | os.PathLike, settings: DistillSettings = DistillSettings(), *,
            base: str | None = None, id_field: str = "id", batch_size: int = 16, limit: int | None = None,
            device: str = "cpu") -> Path:
    """The base model (``base``: bundled name, HF folder or hub id; default: bundled) writes a response to every
    prompt of the jsonl file ``prompts`` (the first ``limit``), appended to ``out`` (this rank's shard of it);
    resumable. Returns the file written."""
    from tqdm import tqdm

    from hamburger.core.base import load_base, pick_device

    if batch_size < 1 or settings.max_new_tokens < 1 or settings.temperature < 0 or not 0 < settings.top_p <= 1:
        raise HamburgerError("need --batch-size >= 1, --max-new-tokens >= 1, --temperature >= 0, 0 < --top-p <= 1")
    where = pick_device(device)
    records = read_jsonl(prompts, tail="ignore", missing_ok=True)
    if limit is not None:
        records = records[:limit]
    field = settings.prompt_field
    if records and field not in records[0]:
        raise HamburgerError(f"{prompts}: no field {field!r} (fields: {sorted(records[0])})")
    ids = row_ids(records, id_field, Path(prompts).stem)
    rank, world = shard_info()
    out = shard_path(out, rank, world)
    out.parent.mkdir(parents=True, exist_ok=True)
    done = {r["id"] for r in read_jsonl(out, tail="cut", missing_ok=True)}
    model, tok, info = load_base(base, settings.dtype)
    model.to(where)
    meta = {"kind": "distill", "base": info.spec, "base_fingerprint": info.fingerprint,
            "tokenizer_vocab_size": len(tok), "settings": asdict(settings), "prompts": str(prompts)}
    check_meta(out, meta, ("base_fingerprint", "settings"), bool(done))
    eos = eos_ids(model, tok, required=True)
    pad = tok.pad_token_id if tok.pad_token_id is not None else eos[0]
    context = getattr(model.config, "max_position_embeddings", None) or 10**9
    pending, skipped = [], {"done": 0, "empty": 0, "too_long": 0}
    for i, (rec, rid) in enumerate(zip(records, ids)):
        if i % world != rank:
            continue
        text = rec.get(field)
        if rid in done:
            skipped["done"] += 1
        elif not isinstance(text, str) or not text.strip():
            skipped["empty"] += 1
        else:
            p_ids = chat_prompt_ids(tok, text, settings.system)
            if len(p_ids) + settings.max_new_tokens > context:
                skipped["too_long"] += 1
            else:
                pending.append(({**rec, "id": rid}, p_ids))
    print(f"distill: {len(pending)} prompts to do on rank {rank}/{world} -> {out}; skipped: "
          + ", ".join(f"{k} {v}" for k, v in skipped.items()), file=sys.stderr)
    n_tok, n_rows, t0, c0 = 0, 0, time.perf_counter(), time.process_time()
    bar = tqdm(total=len(pending), unit="prompt", file=sys.stderr, dynamic_ncols=True)
    for batch in _batches(pending, batch_size):
        key = f"{settings.seed}|" + "|".join(r["id"] for r, _ in batch)
        torch.manual_seed(int(hashlib.sha256(key.encode()).hexdigest()[:8], 16))
        results = generate_batch(model, [p for _, p in batch], eos, pad, settings)
        rows = []
        for (rec, p_ids), (resp, reason, stop_id) in zip(batch, results):
            row = {"id": rec["id"], "prompt": rec[field],
                   "response": tok.decode(resp, skip_special_tokens=False), "response_token_ids": resp,
                   "finish_reason": reason, "stop_token_id": stop_id, "n_prompt_tokens": len(p_ids),
                   "base_fingerprint": info.fingerprint}
            rows.append({**row, **{k: v for k, v in rec.items() if k not in row and k != field}})
            n_tok += len(resp) + (reason == "eos")
        append_jsonl(out, rows)
        n_rows += len(rows)
        bar.update(len(rows))
        bar.set_postfix(tok_s=f"{n_tok / (time.perf_counter() - t0):.1f}")
    bar.close()
    dt = time.perf_counter() - t0
    print(f"distill: wrote {n_rows} rows, {n_tok} generated tokens in {dt:.1f} s: "
          f"{n_tok / max(dt, 1e-9):.1f} tok/s ({n_tok / max(time.process_time() - c0, 1e-9):.1f} per CPU-second; "
          f"batch {batch_size}, {torch.get_num_threads()} threads, {settings.dtype}, {model.device})")
    return out
