"""Self-distillation: the base model writes a response to every prompt of a prompt file.

Responses are the base's own decoding of the chat-formatted prompt (``apply_chat_template`` with the generation
prompt), greedy by default, stopping at every EOS id of the model's generation config or at ``--max-new-tokens``:
HF ``generate``'s answer, continuously batched (`data/answers.py`: rows that end leave the batch and waiting prompts
take their places). Pending prompts are sorted by (source, prompt length) within windows of 16 batches, so the rows
read together are alike.

Several responses per prompt (``samples`` N > 1): the main answer (``temperature``, greedy by default) with
the prompt's id, then N - 1 answers sampled at ``sample_temperature`` / ``sample_top_p`` with ids
``ID#s1`` .. ``ID#s{N-1}`` and a field ``sample`` (0 .. N-1). Every sampled row (the main one too, at a
temperature > 0) draws its tokens from a generator of its own, seeded by (``seed``, row id), so its answer
does not depend on the batch it ran in or on a resume.

Output: one jsonl row per prompt (and sample), appended (flush + fsync) after every batch: ``id``, ``prompt``,
``response`` (text, no EOS), ``response_token_ids`` (no EOS), ``finish_reason`` ("eos" | "length"),
``stop_token_id`` (the EOS id that ended it, or null), ``n_prompt_tokens``, ``base_fingerprint``, plus
the other fields of the prompt record (``source``, ``reference``, ``answer``...), and (unless ``entropies`` is off)
``entropies`` and ``token_probs``: for each response token, its EOS too, the entropy (nats) of the base's distribution
it was drawn from and its probability under it (at temperature 1, 4 decimals), which `segment` then cuts by without a
forward of its own (`data/answers.py`; in the dtype the answers were written in). The base and the
generation settings live in a sidecar ``OUT.meta.json`` (the ``sample_*`` settings only when samples > 1, so
files of one response per prompt keep the meta they had).

Resuming: run the same command again. Ids already in OUT are skipped; a truncated last line (from a
kill) is cut off; a resume with another base fingerprint or other settings is refused. Rows are written as they end,
so a run cut short holds every prompt it took but those still decoding (at most a batch, the longer answers more
often); a resume writes them. A run with nothing left to write (every response there, the sidecar naming the same base
and settings) ends before it loads the base.

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

from hamburger.data.answers import Request, answers
from hamburger.data.dataset import sample_id
from hamburger.data.io import (append_jsonl, check_meta, read_jsonl, read_sidecar, row_ids, shard_info,
                               shard_path)
from hamburger.engine.prompt import chat_prompt_ids, eos_ids
from hamburger.errors import HamburgerError

SORT_WINDOW_BATCHES = 16


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
    samples: int = 1  # responses per prompt: the main one (temperature, top_p) + samples - 1 sampled ones
    sample_temperature: float = 1.0  # temperature of the extra samples (> 0)
    sample_top_p: float = 1.0  # nucleus mass of the extra samples

    def draw(self, sample: int, row_id: str) -> tuple[float, float, int]:
        """(temperature, top_p, seed) of one response: sample 0 is the main answer; the seed is the row's own."""
        t, p = (self.temperature, self.top_p) if sample == 0 else (self.sample_temperature, self.sample_top_p)
        return t, p, _seed(f"{self.seed}|{row_id}")

    def meta(self) -> dict:
        """The settings recorded in (and checked against) the sidecar: the sample_* ones only with samples > 1."""
        out = asdict(self)
        return out if self.samples > 1 else {k: v for k, v in out.items() if k not in SAMPLE_FIELDS}


SAMPLE_FIELDS = ("samples", "sample_temperature", "sample_top_p")


def _seed(key: str) -> int:
    return int(hashlib.sha256(key.encode()).hexdigest()[:8], 16)


def _ordered(pending: list[tuple[dict, list[int], int]], batch_size: int) -> list[tuple[dict, list[int], int]]:
    """``pending`` sorted by (source, prompt length) within windows of `SORT_WINDOW_BATCHES` batches."""
    window, out = batch_size * SORT_WINDOW_BATCHES, []
    for w in range(0, len(pending), window):
        out += sorted(pending[w:w + window], key=lambda x: (str(x[0].get("source", "")), len(x[1])))
    return out


def _nothing_left(out: Path, mine: list[tuple[dict, list[str]]], done: set[str], field: str,
                  settings: DistillSettings, base: str | None) -> bool:
    """Whether a run has nothing to write, known without loading the base: every response of this rank's prompts
    (but those whose prompt is empty) is in ``out``, whose sidecar names the same base and settings. (Whether the
    weights under that name changed is checked where the base loads, that is, where anything is left to write.)"""
    from hamburger.core.base import resolve_base

    if any(rid not in done for rec, rows_of in mine for rid in rows_of
           if isinstance(rec.get(field), str) and rec[field].strip()):
        return False
    old = read_sidecar(out)
    return bool(old) and old.get("settings") == settings.meta() and old.get("base") == resolve_base(base)[0]


def distill(prompts: str | os.PathLike, out: str | os.PathLike, settings: DistillSettings = DistillSettings(), *,
            base: str | None = None, id_field: str = "id", batch_size: int = 16, limit: int | None = None,
            device: str = "cpu", entropies: bool = True) -> Path:
    """The base model (``base``: bundled name, HF folder or hub id; default: bundled) writes a response to every
    prompt of the jsonl file ``prompts`` (the first ``limit``), appended to ``out`` (this rank's shard of it), with
    each token's entropy and probability where ``entropies``; resumable. Returns the file written."""
    from tqdm import tqdm

    from hamburger.core.base import load_base, pick_device

    if batch_size < 1 or settings.max_new_tokens < 1 or settings.temperature < 0 or not 0 < settings.top_p <= 1:
        raise HamburgerError("need --batch-size >= 1, --max-new-tokens >= 1, --temperature >= 0, 0 < --top-p <= 1")
    if settings.samples < 1 or settings.sample_temperature <= 0 or not 0 < settings.sample_top_p <= 1:
        raise HamburgerError("need --samples >= 1, --sample-temperature > 0, 0 < --sample-top-p <= 1")
    where = pick_device(device)
    records = read_jsonl(prompts, tail="ignore", missing_ok=True)
    if limit is not None:
        records = records[:limit]
    field = settings.prompt_field
    if records and field not in records[0]:
        raise HamburgerError(f"{prompts}: no field {field!r} (fields: {sorted(records[0])})")
    ids = row_ids(records, id_field, Path(prompts).stem)
    names = [[sample_id(rid, i) for i in range(settings.samples)] for rid in ids]
    if settings.samples > 1 and len({n for ns in names for n in ns}) < len(ids) * settings.samples:
        raise HamburgerError(f"{prompts}: a prompt id ends in '#s<number>' like the sample ids; rename it")
    rank, world = shard_info()
    out = shard_path(out, rank, world)
    out.parent.mkdir(parents=True, exist_ok=True)
    done = {r["id"] for r in read_jsonl(out, tail="cut", missing_ok=True)}
    mine = [(rec, rows_of) for i, (rec, rows_of) in enumerate(zip(records, names)) if i % world == rank]
    if _nothing_left(out, mine, done, field, settings, base):
        print(f"distill: nothing to do on rank {rank}/{world}: {out} holds every response ({len(done)} rows) from the "
              "same base and settings; the base is not loaded", file=sys.stderr)
        return out
    model, tok, info = load_base(base, settings.dtype)
    model.to(where)
    meta = {"kind": "distill", "base": info.spec, "base_fingerprint": info.fingerprint,
            "tokenizer_vocab_size": len(tok), "settings": settings.meta(), "prompts": str(prompts)}
    check_meta(out, meta, ("base_fingerprint", "settings"), bool(done))
    eos = eos_ids(model, tok, required=True)
    context = getattr(model.config, "max_position_embeddings", None) or 10**9
    pending, skipped = [], {"done": 0, "empty": 0, "too_long": 0}
    for rec, rows_of in mine:
        todo = [(n, rid) for n, rid in enumerate(rows_of) if rid not in done]  # n: the sample (0 = main answer)
        skipped["done"] += len(rows_of) - len(todo)
        text = rec.get(field)
        if not todo:
            continue
        if not isinstance(text, str) or not text.strip():
            skipped["empty"] += 1
        else:
            p_ids = chat_prompt_ids(tok, text, settings.system)
            if len(p_ids) + settings.max_new_tokens > context:
                skipped["too_long"] += 1
            else:
                pending += [({**rec, "id": rid}, p_ids, n) for n, rid in todo]
    what = "responses" if settings.samples > 1 else "prompts"
    print(f"distill: {len(pending)} {what} to do on rank {rank}/{world} -> {out}; skipped: "
          + ", ".join(f"{k} {v}" for k, v in skipped.items()), file=sys.stderr)
    n_tok, n_rows, t0, c0 = 0, 0, time.perf_counter(), time.process_time()
    bar = tqdm(total=len(pending), unit="prompt", file=sys.stderr, dynamic_ncols=True)
    pending = _ordered(pending, batch_size)
    requests = [Request(i, p_ids, *settings.draw(n, rec["id"])) for i, (rec, p_ids, n) in enumerate(pending)]
    for ended in answers(model, requests, eos, settings.max_new_tokens, batch_size, entropies=entropies):
        rows = []
        for answer in ended:
            (rec, p_ids, n), resp, reason, stop_id = (pending[answer.key], answer.tokens, answer.finish_reason,
                                                      answer.stop_token_id)
            row = {"id": rec["id"], **({"sample": n} if settings.samples > 1 else {}), "prompt": rec[field],
                   "response": tok.decode(resp, skip_special_tokens=False), "response_token_ids": resp,
                   "finish_reason": reason, "stop_token_id": stop_id, "n_prompt_tokens": len(p_ids),
                   "base_fingerprint": info.fingerprint}
            if entropies:
                row["entropies"] = [round(e, 4) for e in answer.entropies]
                row["token_probs"] = [round(p, 4) for p in answer.token_probs]
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
