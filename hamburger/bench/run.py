"""`hamburger bench`: HAMburger against the base model and its peers, in one process and one run.

All methods decode greedily with the same prompts, max_new_tokens, dtype, threads and environment;
methods are interleaved prompt by prompt and repetitions go round the methods (so machine drift hits
all of them alike), each is warmed up first, and each (method, prompt) is repeated; the median
repetition is kept and the spread of the repetitions is reported. Quality is reported side by side as
agreement with the base model's own greedy output. A run records every prompt as it is measured and
resumes where it stopped (`--restart` starts over).
"""

from __future__ import annotations

import resource
import statistics
import sys
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

from hamburger.bench.log import BenchLog, prompts_digest
from hamburger.bench.methods import (DEFAULT_METHODS, LLAMA_CPP_METHODS, METHOD_NAMES, VERIFY_FOLD, HamburgerMethod,
                                     HFMethod, Measurement, build_methods, compiled_hf_kwargs)
from hamburger.bench.prompts import CATEGORIES, category_prompts, load_prompt_file
from hamburger.errors import HamburgerError
from hamburger.core.base import pick_device
from hamburger.bench.machine import machine_info


@dataclass
class BenchSettings:
    categories: list[str] = field(default_factory=lambda: list(CATEGORIES))
    methods: list[str] = field(default_factory=lambda: list(DEFAULT_METHODS))
    confidences: list[float] = field(default_factory=lambda: [0.5, 0.7, 0.8, 0.9])
    n_prompts: int = 20
    max_new_tokens: int = 128
    repeats: int = 3
    lengths: list[int] = field(default_factory=lambda: [64, 128, 256, 512, 1024])
    batch_sizes: list[int] = field(default_factory=lambda: [1, 4, 16])
    sweep_confidence: float | None = None  # HAMburger's knob in the length and batch sweeps (None: the model's default)
    threads: int | None = None
    dtype: str = "float32"
    device: str = "cpu"
    compile: str | None = None  # GPU mode: static caches and this torch.compile backend for the per-step forwards
    micro_loop: str = "host"  # HAMburger's micro loop: "host" (a decision per micro step) or "device"
    folds: list[str] = field(default_factory=lambda: [VERIFY_FOLD])  # verify_fold: one method per fold spec

    @classmethod
    def quick(cls) -> "BenchSettings":
        return cls(n_prompts=2, max_new_tokens=32, repeats=1, confidences=[0.5, 0.9], lengths=[32, 64],
                   batch_sizes=[1, 4], methods=["hamburger", "own_loop", "hf_generate", "prompt_lookup"])


def copy_bandwidth_gbs(mib: int = 256, device: str = "cpu") -> float:
    """Memory copy bandwidth of the device (GB/s, read + write) from the best of five large tensor copies."""
    import torch

    src = torch.ones(mib * 2**18, device=device)
    dst = torch.empty_like(src)
    best = float("inf")
    for _ in range(5):
        start = time.perf_counter()
        dst.copy_(src)
        if src.device.type == "cuda":
            torch.cuda.synchronize()
        best = min(best, time.perf_counter() - start)
    return 2 * src.numel() * 4 / best / 1e9


def agreement(a: list[int], b: list[int]) -> tuple[bool, float]:
    """(identical, fraction of the reference matched before the first difference)."""
    same = 0
    for x, y in zip(a, b):
        if x != y:
            break
        same += 1
    return a == b, same / max(1, len(b))


def measure(methods, prompts, ids, settings: BenchSettings, progress, log: BenchLog | None = None) -> list[dict]:
    """Every method on every prompt, interleaved; the median of `repeats` runs by decode time.

    Repetitions go round the methods (A B C A B C ...), so a passing disturbance hits them alike.
    Prompts already in ``log`` are skipped; each newly measured prompt is written to it at once."""
    measured = dict(log.prompts) if log is not None else {}
    todo = [i for i in range(len(prompts)) if i not in measured]
    progress.update((len(prompts) - len(todo)) * len(methods))
    if todo:
        for m in methods:  # warm-up
            m.run(ids[todo[0]], min(8, settings.max_new_tokens))
    for i in todo:
        runs: dict[str, list[Measurement]] = {m.name: [] for m in methods}
        for _ in range(settings.repeats):
            for m in methods:
                runs[m.name].append(m.run(ids[i], settings.max_new_tokens))
        progress.update(len(methods))
        measured[i] = _prompt_rows(prompts[i], runs)
        if log is not None:
            log.add_prompt(i, measured[i])
    return [row for i in sorted(measured) for row in measured[i]]


def _prompt_rows(prompt: dict, runs: dict[str, list[Measurement]]) -> list[dict]:
    median = {name: sorted(reps, key=lambda r: r.decode_s)[len(reps) // 2] for name, reps in runs.items()}
    reference = median.get("hf_generate") or median.get("own_loop")
    rows = []
    for name, r in median.items():
        identical, prefix = agreement(r.token_ids, reference.token_ids) if reference else (None, None)
        rows.append({"category": prompt["category"], "prompt_id": prompt.get("id"), "method": name,
                     "tokens": r.tokens, "forwards": r.forwards, "tau": r.tau, "ttft_s": r.ttft_s,
                     "decode_s": r.decode_s, "decode_tok_s": r.decode_tok_s, "first_tokens": r.first_tokens,
                     "decode_s_runs": [x.decode_s for x in runs[name]],
                     "kv_bytes": r.kv_bytes, "kv_slots": r.kv_slots, "output_kv_bytes": r.output_kv_bytes,
                     "identical_to_base": identical, "matched_prefix": prefix})
    return rows


def summarise(rows: list[dict], weight_bytes: int, own_weights: dict[str, int] | None = None) -> list[dict]:
    """Per (category, method): pooled decode tok/s, speedup vs HF generate, medians, KV per token, and the whole
    cache's bytes at the answers' ends (prompt included) against HF generate's on the same prompts (``kv_vs_hf``: the
    per-token figure charges each prompt token a whole slot, which a cache that stores its prompt coarser does not).
    The base's weights read per forward are ``weight_bytes``, or a method's own in ``own_weights`` (llama_cpp reads
    its GGUF's quantized tensors)."""
    out, held = [], {}
    keys = sorted({(r["category"], r["method"]) for r in rows})
    for category in sorted({k[0] for k in keys}) + ["all"]:
        group = [r for r in rows if category in ("all", r["category"])]
        for method in dict.fromkeys(r["method"] for r in rows):
            rs = [r for r in group if r["method"] == method]
            if not rs:
                continue
            decoded = sum(r["tokens"] - r["first_tokens"] for r in rs)
            decode_s = sum(r["decode_s"] for r in rs)
            tokens, forwards = sum(r["tokens"] for r in rs), sum(r["forwards"] for r in rs)
            per_run = _per_repetition_tok_s(rs)
            held[method] = sum(r["kv_bytes"] for r in rs)
            out.append({"category": category, "method": method, "prompts": len(rs),
                        "decode_tok_s": decoded / decode_s if decode_s else 0.0,
                        "tok_s_min": min(per_run) if per_run else None, "tok_s_max": max(per_run) if per_run else None,
                        "ttft_ms": 1000 * statistics.median(r["ttft_s"] for r in rs),
                        "tau": tokens / forwards if forwards else 0.0,
                        "kv_bytes_per_token": sum(r["output_kv_bytes"] for r in rs) / max(1, tokens),
                        "identical_to_base": _mean(r["identical_to_base"] for r in rs),
                        "matched_prefix": _mean(r["matched_prefix"] for r in rs),
                        "base_read_gbs": (own_weights or {}).get(method, weight_bytes) * (forwards - len(rs))
                        / decode_s / 1e9 if decode_s else 0.0})
        hf = next((s for s in out if s["category"] == category and s["method"] == "hf_generate"), None)
        for s in (s for s in out if s["category"] == category and hf):
            if hf["decode_tok_s"]:
                s["speedup_vs_hf"] = s["decode_tok_s"] / hf["decode_tok_s"]
            if held["hf_generate"]:
                s["kv_vs_hf"] = held[s["method"]] / held["hf_generate"]
    return out


def _per_repetition_tok_s(rows: list[dict]) -> list[float]:
    """Pooled decode tok/s of each repetition (1st runs of every prompt, 2nd runs, ...): the run-to-run spread."""
    runs = [r.get("decode_s_runs") or [r["decode_s"]] for r in rows]
    decoded = sum(r["tokens"] - r["first_tokens"] for r in rows)
    return [decoded / t for t in (sum(x[k] for x in runs) for k in range(min(map(len, runs)))) if t > 0]


def _mean(values) -> float | None:
    values = [float(v) for v in values if v is not None]
    return sum(values) / len(values) if values else None


def length_sweep(model, tokenizer, prompt_ids, lengths, reference=None, confidence=None,
                 settings: BenchSettings | None = None) -> list[dict]:
    """KV bytes and base forwards vs output length (EOS ignored so every run reaches its length)."""
    out = []
    extra = _hamburger_options(settings)
    for method in (HamburgerMethod(model, tokenizer, confidence or model.config.default_confidence, **extra),
                   HamburgerMethod(reference or model, tokenizer, 1.0, name="own_loop", **extra)):
        for n in lengths:
            r = method.run(prompt_ids, n, ignore_eos=True)
            out.append({"method": method.name, "new_tokens": r.tokens, "forwards": r.forwards,
                        "kv_bytes": r.kv_bytes, "kv_slots": r.kv_slots, "decode_tok_s": r.decode_tok_s})
    return out


def _hamburger_options(settings: BenchSettings | None) -> dict:
    """HamburgerMethod's options from the settings: the static cache in the compiled mode, the micro loop."""
    if settings is None:
        return {}
    return {"static_cache": settings.compile is not None, "micro_loop": settings.micro_loop}


def batch_sweep(model, tokenizer, ids, batch_sizes, max_new_tokens, reference=None, confidence=None,
                settings: BenchSettings | None = None) -> list[dict]:
    """Generated tokens per second (wall time, prefill included) at each batch size vs HF batched generate.

    EOS is ignored so every row of every method makes exactly ``max_new_tokens``: methods whose answers
    differ in length (HAMburger at a low knob) are compared on the same amount of work."""
    out = []
    base = (reference or model).base
    compiled = settings is not None and settings.compile is not None
    methods = [HamburgerMethod(model, tokenizer, confidence or model.config.default_confidence,
                               **_hamburger_options(settings)),
               HFMethod(base, tokenizer, **(compiled_hf_kwargs(base.device, settings.compile) if compiled else {}))]
    for b in batch_sizes:
        batch = (ids * (b // max(1, len(ids)) + 1))[:b]
        for m in methods:
            m.run_batch(batch[:1], 4)
            start = time.perf_counter()
            rows = m.run_batch(batch, max_new_tokens, ignore_eos=True)
            wall = time.perf_counter() - start
            out.append({"method": m.name, "batch_size": b, "tokens": sum(map(len, rows)),
                        "tok_s": sum(map(len, rows)) / wall, "wall_s": wall})
    return out


def folds_to_time(settings: BenchSettings) -> dict:
    """Each of ``settings.folds`` parsed (a spec's mistakes found before any model loads); they need verify_fold."""
    from hamburger.engine.folding import parse_folding

    if not settings.folds or len(set(settings.folds)) < len(settings.folds):
        raise HamburgerError(f"give verify_fold one or more different fold specs, got {settings.folds}")
    if settings.folds != [VERIFY_FOLD] and "verify_fold" not in settings.methods:
        raise HamburgerError("folds are what the verify_fold method times: add verify_fold to the methods")
    return {spec: parse_folding(spec) for spec in settings.folds}


def run_bench(model, tokenizer, settings: BenchSettings, prompts: list[dict] | None = None,
              reference=None, log: BenchLog | None = None, fold_models: dict | None = None,
              assistant: tuple | None = None, gguf: str | None = None) -> dict:
    """All methods side by side; ``reference`` is the unchanged base model the baselines run (default ``model``),
    ``fold_models`` what each fold of verify_fold runs, ``assistant`` (model, tokenizer) the drafter of the assisted
    method, ``gguf`` the base's file that the llama_cpp methods run (`build_methods`). With a ``log`` the run resumes from and
    records into it."""
    import torch
    from tqdm import tqdm

    from hamburger.engine.prompt import encode_prompt

    if prompts is None:
        prompts = bench_prompts(settings)
    ids = [encode_prompt(tokenizer, p["prompt"]) for p in prompts]
    methods = build_methods(model, tokenizer, settings.methods, settings.confidences, reference=reference,
                            compile_backend=settings.compile, micro_loop=settings.micro_loop, folds=settings.folds,
                            fold_models=fold_models, assistant=assistant, gguf=gguf,
                            threads=settings.threads or torch.get_num_threads())
    weight_bytes = sum(p.numel() * p.element_size() for p in model.base.parameters())
    with tqdm(total=len(prompts) * len(methods), desc="bench", unit="run") as progress:
        rows = measure(methods, prompts, ids, settings, progress, log)
    own_weights = {m.name: m.weight_bytes for m in methods if getattr(m, "weight_bytes", None)}
    session = log.sessions[-1] if log is not None else {}  # (its bandwidth was measured as it began)
    result = {"settings": asdict(settings), "rows": rows, "summary": summarise(rows, weight_bytes, own_weights),
              "copy_bandwidth_gbs": session.get("copy_bandwidth_gbs") or copy_bandwidth_gbs(device=str(model.device)),
              "base_weight_bytes": weight_bytes}
    sweeps = {"length_sweep": (settings.lengths, lambda: length_sweep(
                  model, tokenizer, ids[0], settings.lengths, reference, settings.sweep_confidence, settings)),
              "batch_sweep": (settings.batch_sizes, lambda: batch_sweep(
                  model, tokenizer, ids, settings.batch_sizes, settings.max_new_tokens, reference,
                  settings.sweep_confidence, settings))}
    for name, (wanted, run) in sweeps.items():
        if not wanted:
            continue
        if log is not None and name in log.sweeps:
            result[name] = log.sweeps[name]
            continue
        result[name] = run()
        if log is not None:
            log.add_sweep(name, result[name])
    if log is not None:
        result["sessions"] = log.sessions
    result["peak_rss_mib"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    return result


def bench_prompts(settings: BenchSettings) -> list[dict]:
    return [p for c in settings.categories for p in category_prompts(c, settings.n_prompts)]


def peer_gguf(gguf: str | None, base_spec: str) -> str:
    """The GGUF file the llama_cpp methods run: ``gguf`` where given, else the bundled base's own file."""
    from hamburger.core.base import BUNDLED, bundled_gguf_path

    if gguf is None:
        if base_spec not in BUNDLED:
            raise HamburgerError(f"the llama_cpp methods run the base as a GGUF file: give its file (--gguf FILE); "
                                 f"only a bundled base ({', '.join(BUNDLED)}) has one at hand")
        return str(bundled_gguf_path(base_spec))
    if not Path(gguf).is_file():
        raise HamburgerError(f"GGUF file {gguf!r} does not exist")
    return gguf


def package_version(name: str) -> str | None:
    """An installed package's version (None: not installed)."""
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version(name)
    except PackageNotFoundError:
        return None


def bench(out: str | Path, settings: BenchSettings | None = None, model_dir: str | None = None,
          prompts_file: str | None = None, restart: bool = False, base: str | None = None,
          assistant: str | None = None, gguf: str | None = None) -> Path:
    """Benchmark the checkpoint ``model_dir`` (default: the bundled model) as ``settings`` say (default: the full
    run), on ``prompts_file`` (jsonl, 'prompt' and optional 'category') or the built-in categories; resumes
    an earlier run with the same settings in ``out`` unless ``restart`` (``base``: where the checkpoint's base
    is, if it moved; ``assistant``: the model, as `load_base` reads a spec, that drafts for the assisted method;
    ``gguf``: the base as a GGUF file for the llama_cpp methods, default the bundled base's own). Returns the report
    written there."""
    import torch

    from hamburger.bench.report import write_report
    from hamburger.core.loading import load_model

    settings = settings or BenchSettings()
    bad = [m for m in settings.methods if m not in METHOD_NAMES]
    if bad:
        raise HamburgerError(f"unknown method(s) {bad}; choose from {', '.join(METHOD_NAMES)}")
    foldings = folds_to_time(settings)
    if ("assisted" in settings.methods) != (assistant is not None):
        raise HamburgerError("the assisted method needs an assistant model (--assistant MODEL)" if assistant is None
                             else "an assistant drafts for the assisted method: add assisted to the methods")
    if settings.threads:
        torch.set_num_threads(settings.threads)
    settings.threads = torch.get_num_threads()
    settings.device = pick_device(settings.device).type
    model, tokenizer, info, reference = load_model(model_dir, settings.dtype, base, True, settings.device)
    prompts = load_prompt_file(prompts_file) if prompts_file else bench_prompts(settings)
    model_facts = {"checkpoint": Path(model_dir).name if model_dir else "default",  # no local paths
                   "base": Path(info.spec).name, "fingerprint": info.fingerprint}
    drafter = None
    if assistant is not None:
        from hamburger.core.base import load_base

        helper, helper_tokenizer, helper_info = load_base(assistant, settings.dtype)
        drafter = (helper.to(model.device), helper_tokenizer)
        model_facts["assistant"] = {"base": Path(helper_info.spec).name, "fingerprint": helper_info.fingerprint}
    if set(LLAMA_CPP_METHODS) & set(settings.methods):
        gguf = peer_gguf(gguf, info.spec)
        model_facts["gguf"] = {"file": Path(gguf).name, "bytes": Path(gguf).stat().st_size,
                               "llama_cpp_python": package_version("llama-cpp-python")}
    elif gguf is not None:
        raise HamburgerError("a GGUF file is what the llama_cpp methods run: add llama_cpp to the methods")
    header = {"settings": asdict(settings), "model": model_facts, "prompts": len(prompts),
              "prompts_sha256": prompts_digest(prompts)}
    log = BenchLog(Path(out), header, restart=restart)
    if log.prompts:
        print(f"resuming {log.path}: {len(log.prompts)} of {len(prompts)} prompts already measured", file=sys.stderr)
    log.start_session({**machine_info(settings.threads, settings.dtype, settings.device),
                       "copy_bandwidth_gbs": copy_bandwidth_gbs(device=str(model.device))})
    fold_runners = {}
    if "verify_fold" in settings.methods:
        from hamburger.core.loading import fold_model

        for spec, folding in foldings.items():
            fold_runners[spec] = fold_model(model_dir, folding, model, settings.dtype, base)
        model_facts["fold_reader"] = {spec: m is not model for spec, m in fold_runners.items()}
        model_facts["fold_reader_sampled_only"] = {spec: m.fold_reader_sampled_only for spec, m in fold_runners.items()}
    result = run_bench(model, tokenizer, settings, prompts, reference, log, fold_runners, drafter, gguf)
    result["model"] = model_facts
    return write_report(result, Path(out))
