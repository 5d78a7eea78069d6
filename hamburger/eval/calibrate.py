"""`hamburger calibrate`: choose a model's default knob by rule, on development prompts only.

The rule: the default confidence is the LOWEST knob of the sweep whose every quality difference from the
base, on the dev prompts, lies inside its target band (`paired.DEFAULT_BANDS` unless --bands is given).
"Inside" is judged by the point estimate (--rule point, the default) or by the whole paired-bootstrap 95%
interval (--rule ci, stricter: with few prompts it keeps knobs near 1.0). Confidence 1.0 decodes exactly as
the base greedy, so include it in the sweep as the fallback.

Dev prompts only: the fixed dev split of `prompts` (tasks chat and gsm8k; the last 500 GSM8K train rows and
1 in 20 other prompts by hash, which never enter training). Test sets (ifeval, humaneval, GSM8K test) and
custom prompt files are refused. The chosen knob is written into the checkpoint's hamburger_config.json
(config.default_confidence, as `export --default-confidence` does) with a "calibration" record: the rule,
bands, prompts and each knob's verdicts.
"""

from __future__ import annotations

import json
from pathlib import Path

from hamburger.data.io import read_jsonl
from hamburger.errors import HamburgerError

DEV_TASKS = ("chat", "gsm8k")
TEST_TASKS = ("ifeval", "humaneval")


def check_dev(tasks: list[str], meta: dict | None = None) -> None:
    """Refuse anything but the fixed dev split."""
    test = [t for t in tasks if t in TEST_TASKS]
    if test:
        raise HamburgerError(f"{', '.join(test)} is a test set: never calibrate on it "
                             f"(dev tasks: {', '.join(DEV_TASKS)})")
    unknown = [t for t in tasks if t not in DEV_TASKS]
    if unknown:
        raise HamburgerError(f"cannot calibrate on {unknown}; dev tasks: {', '.join(DEV_TASKS)}")
    if meta and (meta.get("gsm8k_file") or meta.get("chat_file")):
        raise HamburgerError("those results used a custom prompt file; calibrate on the fixed dev split only")


def knob_passes(comparisons: list[dict], rule: str) -> bool:
    return all(c["point_inside"] if rule == "point" else c["verdict"] == "inside" for c in comparisons)


def choose_knob(comparisons: list[dict], knobs: list[float], rule: str = "point") -> tuple[float, dict]:
    """The lowest knob whose comparisons all lie inside their bands, and each knob's verdict."""
    if rule not in ("point", "ci"):
        raise HamburgerError(f"unknown rule {rule!r}; choose point or ci")
    verdicts = {}
    for knob in sorted(knobs):
        mine = [c for c in comparisons if c["confidence"] == knob]
        if not mine:
            raise HamburgerError(f"no band applies to knob {knob:g}: nothing to judge it by")
        verdicts[knob] = knob_passes(mine, rule)
    passing = [k for k, ok in verdicts.items() if ok]
    if not passing:
        raise HamburgerError(f"no knob of {sorted(knobs)} stays inside the bands on the dev prompts; "
                             "add 1.0 (the base's own decoding) to the sweep")
    return passing[0], verdicts


def write_default_knob(model_dir: str | Path, knob: float, record: dict) -> Path:
    """Set config.default_confidence in a checkpoint's hamburger_config.json (atomically), with the record."""
    from hamburger.core.checkpoint import read_meta, write_meta

    meta = read_meta(model_dir)
    meta["config"]["default_confidence"] = knob
    meta["calibration"] = record
    return write_meta(model_dir, meta)


def calibrate_from(records: list[dict], meta: dict, knobs: list[float], bands, rule: str) -> tuple[float, dict]:
    """Choose the knob from an eval run's records; the record to store beside it."""
    from dataclasses import asdict

    from hamburger.eval.paired import compare

    check_dev(sorted({r["task"] for r in records}), meta)
    comparisons = compare(records, bands)
    knob, verdicts = choose_knob(comparisons, knobs, rule)
    record = {"rule": rule, "knob": knob, "tasks": sorted({r["task"] for r in records}),
              "examples": {t: len({r["id"] for r in records if r["task"] == t}) for t in {r["task"] for r in records}},
              "max_new_tokens": meta.get("max_new_tokens"), "bands": [asdict(b) for b in bands],
              "knobs": {f"{k:g}": ok for k, ok in verdicts.items()},
              "comparisons": [{k: c[k] for k in ("task", "confidence", "band_text", "diff", "lo", "hi", "verdict")}
                              for c in comparisons]}
    return knob, record


def calibrate(model_dir: str | Path, tasks: tuple[str, ...] | list[str] = DEV_TASKS,
              knobs: list[float] | None = None, *,
              results: str | Path | None = None, limit: int = 40, max_new_tokens: int = 256, batch_size: int = 4,
              rule: str = "point", bands=None, out: str | Path = "runs/calibrate", dry_run: bool = False,
              dtype: str = "float32", device: str = "cpu", base: str | None = None) -> tuple[float, dict]:
    """Choose the default knob of the checkpoint ``model_dir`` from a sweep of ``knobs`` (default 0.5..1.0) on
    the dev ``tasks``, run now (its eval outputs in ``out``, where a killed sweep goes on from its answers: `eval`'s
    progress file) or read from the eval folder ``results``; write it into the checkpoint unless ``dry_run``. Returns
    (knob, the calibration record)."""
    from hamburger.eval.paired import DEFAULT_BANDS

    bands, tasks = bands or DEFAULT_BANDS, list(tasks)
    knobs = knobs or [0.5, 0.6, 0.7, 0.8, 0.9, 1.0]
    check_dev(tasks)
    if results:
        records = read_jsonl(Path(results) / "examples.jsonl")
        meta = json.loads((Path(results) / "summary.json").read_text())["meta"]
        records = [r for r in records if r["task"] in tasks]
        knobs = sorted({r["confidence"] for r in records if r["method"].startswith("hamburger@")})
    else:
        import torch

        from hamburger.bench.machine import machine_info
        from hamburger.core.loading import load_model
        from hamburger.eval.run import finished, resumable, run_eval, run_meta, write_outputs

        model, tokenizer, info, reference = load_model(model_dir, dtype, base, True, device)
        # (with the fields `eval --reuse-base` checks, so a later eval can take this sweep's base answers as they are)
        meta = {**run_meta(model_dir, info, limit, max_new_tokens), "split": "dev"}
        progress = resumable(out, {**meta, "dtype": dtype, "device": device}, model_dir)
        records, summary = run_eval(model, tokenizer, tasks, knobs, limit, max_new_tokens,
                                    batch_size=batch_size, reference=reference, progress=progress)
        meta["machine"] = machine_info(torch.get_num_threads(), dtype, model.device.type)
        write_outputs(Path(out), records, summary, meta, bands)
        finished(progress)
    knob, record = calibrate_from(records, meta, knobs, bands, rule)
    if not dry_run:
        write_default_knob(model_dir, knob, record)
    return knob, record
