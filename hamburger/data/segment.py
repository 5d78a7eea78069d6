"""Entropy segmentation: cut every response into groups of 1..max_steps tokens for HAMburger training.

One forward of the base model over the chat-formatted prompt + response gives, for each response token
i, the entropy (nats) of the base's next-token distribution at the position before i and the
probability of token i. Rows that `distill` wrote with these (its ``entropies``, from the forwards that drew the
tokens) are cut by them instead, with no forward, where the same base wrote them for the same prompt (system message,
prompt and response fields as distill wrote them) in this run's dtype (``--entropies same-dtype``, the default: in
float32 they equal the forward's to the stored 4 decimals; a bfloat16 distill's differ from float32 ones by 0.02
nats on average and move about 2% of the group starts, experiments/2026-12-08-recorded-entropies/), in any dtype
(``recorded``), or never (``recompute``). A strategy turns the entropies into group sizes (the first response token
always starts a group); the sizes sum to the response length:
  * decreasing_v2: extend while the group has < max_steps tokens AND (entropy < abs_threshold OR
    entropy < ratio x the largest entropy in the group so far); else start a new group.
  * decreasing: start a new group when entropy > ratio x the group's first entropy, or when full.
  * sliding: extend while entropy < H(sliding_p) and the group is not full.
  * small_group: tokens with entropy > H(small_group_p) are singletons; runs of confident tokens are
    cut into groups of at most max_steps.
H(p) = -(p ln p + (1-p) ln((1-p)/(V-1))): the entropy of a distribution with top probability p and the
rest spread evenly over the other V-1 tokens (V = the model's vocabulary size).

Responses end with the model's EOS id when they are complete (a distilled row that hit its length
limit, or a truncated one, gets none), so the model learns to stop. Distilled rows made by the same base
keep their exact ``response_token_ids``; text responses are tokenized. Every input row must be a JSON
object whose prompt and response fields are strings (and distilled ids integers): a wrong type is an
error naming the file, line and field; only empty strings are skipped (and counted) as "empty".

Output (one row per response, appended + fsync'd, resumable by id, shardable by RANK/WORLD_SIZE like
distill): ``id``, ``prompt_ids`` (chat-formatted, incl. the generation prompt), ``response_ids``,
``groups``, ``entropies`` and ``token_probs`` (4 decimals), ``complete``, ``truncated``; sidecar
``OUT.meta.json`` with settings, tokenizer, base and stats. ``--from-dataset`` re-cuts an existing
dataset with another strategy without the model. Rows longer than ``--max-length`` prompt + response
tokens are dropped (``--long drop``) or get their response cut (``--long truncate``); both are counted, and the
sidecar's ``stats.left_out`` names the rows left out (id -> why), so a rerun with every row there or left out, by the
same base and settings, ends before it loads the base.
Join shards as for distill (``cat OUT.rank* > OUT``, copy ``OUT.rank0.meta.json``; its stats are rank 0's).
"""

from __future__ import annotations

import math
import sys
import time
from collections import Counter
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Callable, Sequence

import torch

from hamburger.data.dataset import load_dataset, vocab_hash
from hamburger.data.io import (append_jsonl, check_meta, line_of, read_jsonl, read_sidecar, row_ids, shard_info,
                               shard_path)
from hamburger.engine.prompt import chat_prompt_ids, eos_ids
from hamburger.errors import HamburgerError

Entropies = Sequence[float] | torch.Tensor
# which entropies distill recorded `segment` cuts by: those of its run's dtype, any, or none (a forward for every row)
ENTROPY_SOURCES = ("same-dtype", "recorded", "recompute")


def entropy_threshold(p: float, vocab_size: int) -> float:
    """H(p): entropy (nats) of a distribution with top probability p and the rest uniform over V-1 tokens."""
    if not 0.0 < p < 1.0 or vocab_size < 2:
        raise HamburgerError(f"H(p) needs 0 < p < 1 and a vocabulary of >= 2 tokens (got p={p}, V={vocab_size})")
    return -(p * math.log(p) + (1 - p) * math.log((1 - p) / (vocab_size - 1)))


def log_softmax_entropy(logits: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """(log-probabilities [n, V] in float32, entropy in nats [n] in float64) of each row of logits [n, V]: the
    entropies segmentation cuts by."""
    logp = torch.log_softmax(logits.float(), dim=-1)
    return logp, -torch.linalg.vecdot(logp.exp(), logp).clamp_max(0).double()


def _cut(entropies: Entropies, max_steps: int, extend: Callable[[list[float], float], bool]) -> list[int]:
    """Group sizes: token i joins the current group when it is not full and extend(group, e_i) holds."""
    if max_steps < 1:
        raise HamburgerError(f"max_steps must be >= 1 (got {max_steps})")
    groups: list[list[float]] = []
    for e in (entropies.tolist() if isinstance(entropies, torch.Tensor) else entropies):
        if groups and len(groups[-1]) < max_steps and extend(groups[-1], float(e)):
            groups[-1].append(float(e))
        else:
            groups.append([float(e)])
    return [len(g) for g in groups]


def decreasing_v2(entropies: Entropies, max_steps: int = 4, abs_threshold: float = 0.05,
                  ratio: float = 0.3) -> list[int]:
    """Extend while entropy < abs_threshold or < ratio x the group's largest entropy so far."""
    return _cut(entropies, max_steps, lambda g, e: e < abs_threshold or e < ratio * max(g))


def decreasing(entropies: Entropies, max_steps: int = 4, ratio: float = 0.3) -> list[int]:
    """New group when entropy > ratio x the group's first entropy (or the group is full)."""
    return _cut(entropies, max_steps, lambda g, e: e <= ratio * g[0])


def sliding(entropies: Entropies, max_steps: int = 4, threshold: float = 3.85) -> list[int]:
    """Extend while entropy < threshold (pass H(0.7) for the model's vocabulary)."""
    return _cut(entropies, max_steps, lambda g, e: e < threshold)


def small_group(entropies: Entropies, max_steps: int = 4, threshold: float = 0.5) -> list[int]:
    """Tokens with entropy > threshold (pass H(0.95)) are singletons; confident runs are chunked by max_steps."""
    return _cut(entropies, max_steps, lambda g, e: e <= threshold and g[0] <= threshold)


STRATEGIES: dict[str, Callable[..., list[int]]] = {
    "decreasing_v2": decreasing_v2, "decreasing": decreasing, "sliding": sliding, "small_group": small_group}


@dataclass(frozen=True)
class SegmentSettings:
    """A strategy and its options; thresholds given as confidences are turned into nats with H(p)."""

    strategy: str = "decreasing_v2"
    max_steps: int = 4
    abs_threshold: float = 0.05
    ratio: float = 0.3
    sliding_p: float = 0.7
    small_group_p: float = 0.95


def segment_entropies(entropies: Entropies, settings: SegmentSettings, vocab_size: int) -> list[int]:
    """Group sizes of one response under `settings`."""
    s, fn = settings, STRATEGIES.get(settings.strategy)
    if fn is None:
        raise HamburgerError(f"unknown strategy {s.strategy!r}; choose one of {', '.join(STRATEGIES)}")
    opts = {"decreasing_v2": dict(abs_threshold=s.abs_threshold, ratio=s.ratio), "decreasing": dict(ratio=s.ratio),
            "sliding": dict(threshold=entropy_threshold(s.sliding_p, vocab_size)),
            "small_group": dict(threshold=entropy_threshold(s.small_group_p, vocab_size))}[s.strategy]
    return fn(entropies, s.max_steps, **opts)


def compute_entropies(model, tokenizer, pairs: list[tuple[list[int], list[int]]], batch_size: int = 8
                      ) -> list[tuple[list[float], list[float]]]:
    """(entropies, probabilities of the actual tokens) for every response token of (prompt_ids, response_ids).

    Rows are sorted by length and batched with right padding and an explicit attention mask; only the
    positions that predict response tokens go through the LM head; log_softmax runs in float32.
    """
    pad = tokenizer.pad_token_id if tokenizer.pad_token_id is not None else 0
    out: list = [None] * len(pairs)
    order = sorted(range(len(pairs)), key=lambda i: len(pairs[i][0]) + len(pairs[i][1]))
    with torch.inference_mode():
        for k in range(0, len(order), batch_size):
            idx = order[k:k + batch_size]
            width = max(len(pairs[i][0]) + len(pairs[i][1]) for i in idx)
            ids = torch.full((len(idx), width), pad, dtype=torch.long)
            mask = torch.zeros((len(idx), width), dtype=torch.long)
            keep = torch.zeros((len(idx), width), dtype=torch.bool)
            for b, i in enumerate(idx):
                p, r = pairs[i]
                ids[b, :len(p) + len(r)] = torch.tensor(p + r)
                mask[b, :len(p) + len(r)] = 1
                keep[b, len(p) - 1:len(p) + len(r) - 1] = True
            ids, mask, keep = ids.to(model.device), mask.to(model.device), keep.to(model.device)
            logits = model(input_ids=ids, attention_mask=mask, logits_to_keep=keep, use_cache=False).logits
            logits = logits[keep] if logits.dim() == 3 else logits  # (sum of response lengths, V)
            targets = torch.tensor([t for i in idx for t in pairs[i][1]], device=model.device)
            ent = torch.empty(len(targets), dtype=torch.float64, device=model.device)
            prob = torch.empty_like(ent)
            for c in range(0, len(targets), 64):  # cache-sized chunks: ~5x faster than one big log_softmax
                logp, ent[c:c + 64] = log_softmax_entropy(logits[c:c + 64])
                prob[c:c + 64] = logp.gather(1, targets[c:c + 64, None])[:, 0].double().exp()
            ent, prob, start = ent.cpu(), prob.cpu(), 0
            for i in idx:
                n = len(pairs[i][1])
                out[i] = (ent[start:start + n].tolist(), prob[start:start + n].tolist())
                start += n
    return out


def dataset_stats(rows: list[dict]) -> dict:
    """Rows, tokens, groups, mean tokens per group and the group-size histogram."""
    sizes = Counter(g for r in rows for g in r["groups"])
    tokens, groups = sum(len(r["response_ids"]) for r in rows), sum(sizes.values())
    return {"rows": len(rows), "response_tokens": tokens, "groups": groups,
            "tokens_per_group": round(tokens / groups, 4) if groups else 0.0,
            "histogram": {str(k): sizes[k] for k in sorted(sizes)}}


def print_stats(stats: dict) -> None:
    total = max(stats["groups"], 1)
    print(f"segment: {stats['rows']} rows, {stats['response_tokens']} response tokens, {stats['groups']} groups: "
          f"{stats['tokens_per_group']:.3f} tokens per group")
    for k, v in stats["histogram"].items():
        print(f"  group size {k}: {v:8d} {v / total:6.1%} " + "#" * round(40 * v / total))


# ---------------------------------------------------------------- the segment verb
@dataclass(frozen=True)
class SegmentInput:
    """How `segment` reads its input rows (the cut itself is SegmentSettings)."""

    prompt_field: str = "prompt"
    response_field: str = "response"
    id_field: str = "id"  # unique row id (rows without it get '<file stem>:<line>')
    system: str | None = None  # system message (None: the one distill used, if any)
    max_length: int = 1024  # max prompt + response tokens
    long: str = "drop"  # longer rows: "drop" them or "truncate" their response


def _response_ids(row: dict, inp: SegmentInput, tok, same_base: bool, eos: int) -> tuple[list[int], bool]:
    """(response ids, complete): exact distilled ids when the same base wrote them, else the tokenized text."""
    if same_base and isinstance(row.get("response_token_ids"), list):
        ids = list(row["response_token_ids"])
    else:
        ids = list(tok(row[inp.response_field], add_special_tokens=False)["input_ids"])
    complete = row.get("finish_reason", "eos") != "length"
    stop = row.get("stop_token_id") if same_base else None
    return ids + ([stop if stop is not None else eos] if complete else []), complete


def _record_problem(rec, prompt_field: str, response_field: str) -> str | None:
    """What is wrong with one input row (None if nothing): an object with string prompt and response
    fields, and, when present, integer distilled token ids."""
    if not isinstance(rec, dict):
        return f"a row must be a JSON object, got {type(rec).__name__}"
    for field in (prompt_field, response_field):
        if field not in rec:
            return f"no field {field!r} (fields: {sorted(rec)})"
        if not isinstance(rec[field], str):
            return f"field {field!r} must be a string, got {type(rec[field]).__name__} {rec[field]!r:.60}"
    ids, stop = rec.get("response_token_ids"), rec.get("stop_token_id")
    if ids is not None and not (isinstance(ids, list) and all(type(i) is int for i in ids)):
        return f"field 'response_token_ids' must be a list of integer token ids, got {ids!r:.60}"
    for field in ("entropies", "token_probs"):
        values = rec.get(field)
        if values is not None and not (isinstance(values, list) and all(type(v) in (int, float) for v in values)):
            return f"field {field!r} must be a list of numbers, got {values!r:.60}"
    if stop is not None and type(stop) is not int:
        return f"field 'stop_token_id' must be an integer token id, got {stop!r:.60}"
    return None


def _prepare(inp: SegmentInput, records: list[dict], ids: list[str], tok, system: str | None, same_base: bool,
             eos: int, skipped: Counter, left_out: dict[str, str]):
    """Yield a dataset row (no entropies yet) for every record; count the empty and too long ones and note the ids
    of those left out (id -> why)."""
    for rec, rid in zip(records, ids):
        prompt, response = rec[inp.prompt_field], rec[inp.response_field]  # strings (checked)
        if not response.strip() or not prompt.strip():
            skipped["empty"] += 1
            left_out[rid] = "empty"
            continue
        p_ids = chat_prompt_ids(tok, prompt, system)
        r_ids, complete = _response_ids(rec, inp, tok, same_base, eos)
        truncated = len(p_ids) + len(r_ids) > inp.max_length
        if truncated:
            if inp.long == "drop" or len(p_ids) >= inp.max_length:
                skipped["too_long_dropped"] += 1
                left_out[rid] = "too_long_dropped"
                continue
            r_ids, complete = r_ids[:inp.max_length - len(p_ids)], False
            skipped["too_long_truncated"] += 1
        row = {"id": rid, **({"source": rec["source"]} if "source" in rec else {}), "prompt_ids": p_ids,
               "response_ids": r_ids, "complete": complete, "truncated": truncated}
        yield row


def _recorded(rec: dict, row: dict) -> tuple[list[float], list[float]] | None:
    """(entropies, probabilities) of ``row``'s response tokens as distill recorded them in ``rec`` (one a response
    token, the EOS's too where it ended at one), cut as ``row``'s response is; None where ``rec`` holds none (or not
    one a token)."""
    entropies, probs = rec.get("entropies"), rec.get("token_probs")
    tokens = len(rec.get("response_token_ids") or ()) + (rec.get("finish_reason") == "eos")
    if entropies is None or probs is None or not len(entropies) == len(probs) == tokens:
        return None
    n = len(row["response_ids"])
    return entropies[:n], probs[:n]


def _finish(rows: list[dict], settings: SegmentSettings, vocab: int) -> list[dict]:
    for r in rows:
        r["groups"] = segment_entropies(r["entropies"], settings, vocab)
    return rows


def _recut(from_dataset, settings: SegmentSettings, out: Path, done: set, rank: int, world: int,
           skipped: Counter) -> dict:
    """--from-dataset: new groups from the stored entropies; no model."""
    src_rows, src_meta = load_dataset(from_dataset)
    meta = {**{k: v for k, v in src_meta.items() if k != "stats"}, "strategy": settings.strategy,
            "max_steps": settings.max_steps, "settings": asdict(settings), "derived_from": str(from_dataset)}
    check_meta(out, meta, ("settings", "tokenizer", "base_fingerprint", "input"), bool(done))
    todo = [dict(r) for i, r in enumerate(src_rows) if i % world == rank and r["id"] not in done]
    skipped["done"] = sum(r["id"] in done for i, r in enumerate(src_rows) if i % world == rank)
    if any("entropies" not in r for r in todo):
        raise HamburgerError(f"{from_dataset} has rows without entropies; segment it from the data")
    append_jsonl(out, _finish(todo, settings, src_meta["entropy_vocab_size"]))
    print(f"segment: re-cut {len(todo)} rows from {from_dataset} -> {out}")
    return meta


def _nothing_left(data, base, inp: SegmentInput, settings: SegmentSettings, out: Path, done: set, mine: list[str],
                  skipped: Counter) -> dict | None:
    """The sidecar's meta of ``out`` where a run has nothing to write, known without loading the base: every row of
    this rank's is there or was left out (`stats.left_out`: empty, too long) by a run of the same base, cut and input
    settings; None otherwise. (Whether the weights under the base's name changed is checked where the base loads, that
    is, where anything is left to write.)"""
    from hamburger.core.base import resolve_base

    old = read_sidecar(out)
    left_out = old.get("stats", {}).get("left_out", {})
    if not old or any(i not in done and i not in left_out for i in mine):
        return None
    system = inp.system if inp.system is not None else read_sidecar(data).get("settings", {}).get("system")
    given = {"prompt_field": inp.prompt_field, "response_field": inp.response_field, "system": system,
             "max_length": inp.max_length, "long": inp.long}
    if (old.get("settings") != asdict(settings) or old.get("base") != resolve_base(base)[0]
            or {k: old.get("input", {}).get(k) for k in given} != given):
        return None
    skipped["done"] = sum(i in done for i in mine)
    skipped.update(left_out[i] for i in mine if i not in done)
    return old


def _from_data(data, base, inp: SegmentInput, batch_size: int, limit, dtype: str, device: str,
               settings: SegmentSettings, out: Path, done: set, rank: int, world: int, skipped: Counter,
               left_out: dict[str, str], entropies: str, sources: dict) -> dict:
    """--data: the entropies distill recorded (as ``entropies`` allows: `ENTROPY_SOURCES`), else one base forward
    per row for them, then the groups (the sidecar's meta, with its stats, where nothing is left to do); ``sources``
    counts the rows each way."""
    from tqdm import tqdm

    from hamburger.core.base import load_base, pick_device

    if not data:
        raise HamburgerError("give --data FILE.jsonl (or --from-dataset DATASET.jsonl)")
    where = pick_device(device)
    records = read_jsonl(data, tail="ignore", missing_ok=True)[:limit]
    if not records:
        raise HamburgerError(f"{data} is empty or missing")
    for n, rec in enumerate(records, 1):
        problem = _record_problem(rec, inp.prompt_field, inp.response_field)
        if problem:
            raise HamburgerError(f"{data}: line {line_of(data, n)}: {problem}")
    ids = row_ids(records, inp.id_field, Path(data).stem)
    mine = [(r, i) for n, (r, i) in enumerate(zip(records, ids)) if n % world == rank]
    unchanged = _nothing_left(data, base, inp, settings, out, done, [i for _, i in mine], skipped)
    if unchanged is not None:
        print(f"segment: nothing to do on rank {rank}/{world}: {out} holds every row, cut by the same base and "
              "settings; the base is not loaded")
        return unchanged
    model, tok, info = load_base(base, dtype)
    model.to(where)
    vocab = model.get_output_embeddings().weight.shape[0]
    src_meta = read_sidecar(data)
    system = inp.system if inp.system is not None else src_meta.get("settings", {}).get("system")
    all_eos = eos_ids(model, tok, required=True)
    eos = tok.eos_token_id if tok.eos_token_id in all_eos else all_eos[0]
    meta = {"kind": "hamburger-dataset", "format": 1, "strategy": settings.strategy, "max_steps": settings.max_steps,
            "settings": asdict(settings),
            "tokenizer": {"name": info.spec, "vocab_size": len(tok), "vocab_hash": vocab_hash(tok)},
            "entropy_vocab_size": vocab, "base": info.spec, "base_fingerprint": info.fingerprint,
            "input": {"prompt_field": inp.prompt_field, "response_field": inp.response_field, "system": system,
                      "eos_id": eos, "max_length": inp.max_length, "long": inp.long}, "data": str(data)}
    check_meta(out, meta, ("settings", "tokenizer", "base_fingerprint", "input"), bool(done))
    skipped["done"] = sum(i in done for _, i in mine)
    mine = [(r, i) for r, i in mine if i not in done]
    same_base = src_meta.get("base_fingerprint") == info.fingerprint  # then keep the exact distilled ids
    todo = list(_prepare(inp, [r for r, _ in mine], [i for _, i in mine], tok, system, same_base, eos, skipped,
                         left_out))
    distilled = src_meta.get("settings", {})
    # distill's entropies hold where its base read the same prompt and wrote the ids this run cuts
    usable = (same_base and src_meta.get("kind") == "distill" and system == distilled.get("system")
              and (inp.prompt_field, inp.response_field) == ("prompt", "response")
              and (entropies == "recorded" or entropies == "same-dtype" and distilled.get("dtype") == dtype))
    recorded = {i: r for r, i in mine} if usable else {}
    sources.update(recorded=0, recorded_dtype=distilled.get("dtype"), computed=0, computed_dtype=dtype)
    n_tok = n_resp = 0
    t0, c0, window = time.perf_counter(), time.process_time(), batch_size * 8
    bar = tqdm(total=len(todo), unit="row", file=sys.stderr, dynamic_ncols=True)
    for k in range(0, len(todo), window):
        part, need = todo[k:k + window], []
        for r in part:
            stored = _recorded(recorded[r["id"]], r) if r["id"] in recorded else None
            if stored is None:
                need.append(r)
            else:
                r["entropies"], r["token_probs"] = stored
        res = compute_entropies(model, tok, [(r["prompt_ids"], r["response_ids"]) for r in need], batch_size)
        for r, (ent, prob) in zip(need, res):
            r["entropies"], r["token_probs"] = [round(e, 4) for e in ent], [round(p, 4) for p in prob]
            n_tok += len(r["prompt_ids"]) + len(r["response_ids"])
            n_resp += len(r["response_ids"])
        sources["recorded"] += len(part) - len(need)
        sources["computed"] += len(need)
        append_jsonl(out, _finish(part, settings, vocab))
        bar.update(len(part))
    bar.close()
    dt, cpu = max(time.perf_counter() - t0, 1e-9), max(time.process_time() - c0, 1e-9)
    speed = (f": {n_tok / dt:.1f} tokens/s through the base, {n_resp / dt:.1f} response tokens/s "
             f"({n_tok / cpu:.1f} tokens per CPU-second)") if n_tok else ""
    print(f"segment: {len(todo)} rows in {dt:.1f} s: {sources['recorded']} by the entropies distill recorded "
          f"({sources['recorded_dtype']}), {sources['computed']} by this run's forwards ({dtype}){speed}")
    return meta


def segment(out: str | Path, settings: SegmentSettings = SegmentSettings(), *, data: str | Path | None = None,
            from_dataset: str | Path | None = None, base: str | None = None, inputs: SegmentInput = SegmentInput(),
            batch_size: int = 8, limit: int | None = None, dtype: str = "float32", device: str = "cpu",
            entropies: str = "same-dtype") -> dict:
    """Cut the responses of ``data`` (by the entropies distill recorded, as ``entropies`` allows, see
    `ENTROPY_SOURCES`, else one base forward each; ``base`` as for distill) or re-cut ``from_dataset`` (no model) into
    groups under ``settings``, appended to ``out`` (this rank's shard); resumable. Returns the dataset's meta, with
    its stats."""
    segment_entropies([0.0], settings, 2)  # validates the strategy before any work
    if entropies not in ENTROPY_SOURCES:
        raise HamburgerError(f"entropies must be one of {', '.join(ENTROPY_SOURCES)}, got {entropies!r}")
    if inputs.long not in ("drop", "truncate"):
        raise HamburgerError(f"long must be drop or truncate, got {inputs.long!r}")
    rank, world = shard_info()
    out = shard_path(out, rank, world)
    out.parent.mkdir(parents=True, exist_ok=True)
    done = {r["id"] for r in read_jsonl(out, tail="cut", missing_ok=True)}
    skipped: Counter = Counter(done=0)
    left_out: dict[str, str] = {}
    sources: dict = {}  # where this run's entropies came from (`_from_data`)
    meta = (_recut(from_dataset, settings, out, done, rank, world, skipped) if from_dataset else
            _from_data(data, base, inputs, batch_size, limit, dtype, device, settings, out, done, rank, world, skipped,
                       left_out, entropies, sources))
    print("segment: skipped " + ", ".join(f"{k} {v}" for k, v in skipped.items()))
    if "stats" not in meta:  # (a run with nothing to do kept its sidecar, stats and all)
        rows = read_jsonl(out, tail="ignore", missing_ok=True)
        meta["stats"] = {**dataset_stats(rows), **({"left_out": left_out} if left_out else {})}
    meta["stats"]["last_run_skipped"] = dict(skipped)
    if sources:
        meta["stats"]["last_run_entropies"] = sources
    check_meta(out, meta, (), False)
    print_stats(meta["stats"])
    return meta
