"""The decode curve of one or more HAMburger checkpoints: tau against what the unchanged base thinks of the answers.

Every model decodes the same held-out dev prompts (never trained on) at each knob, batched, greedy. The
unchanged base then reads every answer teacher-forced (chat-templated prompt + answer) and gives:
  * nll_per_token, worst_token_nll, rep4: `hamburger.eval.plausibility` (averaged over answers);
  * micro_ok   over all micro tokens (token 2..k of a group): how often the token is the base's own greedy
               choice at that point of the answer (the issue's fidelity target: >= 95% at the default knob);
  * after_merge_ok  the same for the first token of every group after a merged one (the skip path reading a
               smashed group);
  * tau        tokens per base forward (re-reads count as forwards);
  * rereads    merged groups read again as single slots per answer (`--reread`, re-read on doubt), and
    kv_ratio   KV slots held at the end against a one-token-per-forward decode (summed over answers;
               kv_ratio_answer: the answers' slots only, the prompts' left out);
  * by_kind    the answers' NLL by who wrote each token (`plausibility.token_kinds`: single, after_merge, micro):
               tokens, mean NLL, spikes (NLL > 5), and worst_kind_share, where each answer's worst token sits.
  * after_merge_by_size  the skip path by the size of the merged slot it reads (2..max_steps tokens): tokens,
               share equal to the base's greedy choice, mean NLL, spikes.
With ``--verify-folds`` every model also decodes in verify mode with folding (`VerifyGeneration(fold=...)`,
`engine/folding.py`: the MSD drafts, the base keeps its own choices, and groups of older tokens fold into merged slots;
``none`` is plain verify mode, the base's greedy answers), drafting at each knob (the stop head's threshold).
References on the same prompts: the base's greedy answers (knob 1.0, which is the base exactly) and its
sampled answers (temperature 0.7, top-p 0.9, one fixed seed per prompt), which users accept every day.

Paired differences (`paired`, printed last): every decode against the base's greedy and sampled answers and
against the first model's decode at the same gate and knob, per prompt, with 95% bootstrap intervals over the prompts
(`hamburger.eval.paired.paired_bootstrap`): the way to tell a change from the noise of a few dozen prompts.

    python benchmarks/decode_fidelity.py --models hamburger/default_model RUN/last --out RESULT.json
    python benchmarks/decode_fidelity.py --paired RESULT.json   # the paired table of a result file, again
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import torch

from hamburger.core.base import load_base
from hamburger.bench.prompts import category_prompts
from hamburger.core.checkpoint import load_checkpoint
from hamburger.core.config import layout_name, parse_layout
from hamburger.engine.generate import Generation
from hamburger.engine.folding import parse_folding
from hamburger.engine.verify import VerifyGeneration
from hamburger.engine.prompt import encode_prompt, eos_ids
from hamburger.bench.machine import machine_info
from hamburger.eval.paired import paired_bootstrap
from hamburger.eval.plausibility import (KINDS, after_merge_agreement, after_merge_by_size, base_reading,
                                        micro_agreement, nll_by_kind, plausibility)
from hamburger.engine.sampling import DecodingConfig


def score(base, prompt_ids: list[int], answer: list[int], groups: list[int], eos: set[int]) -> dict:
    nll, greedy = base_reading(base, prompt_ids, answer)
    micro, micro_ok = micro_agreement(answer, groups, greedy)
    after, after_ok = after_merge_agreement(answer, groups, greedy)
    return {"tokens": len(answer), **plausibility(base, prompt_ids, answer, eos, reading=nll), "micro": micro,
            "micro_ok": micro_ok, "after_merge": after, "after_merge_ok": after_ok, **nll_by_kind(nll, groups),
            "after_merge_by_size": after_merge_by_size(answer, groups, greedy, nll)}


def decode(model, tokenizer, prompts: list[list[int]], cfgs: list[DecodingConfig], batch_size: int,
           verify_fold: str | None = None) -> list:
    """Batched greedy answers: the default mode, or (``verify_fold``, a `parse_folding` spec or "none") verify mode."""
    out = []
    for i in range(0, len(prompts), batch_size):
        part, configs = prompts[i:i + batch_size], cfgs[i:i + batch_size]
        out += (Generation(model, tokenizer, part, configs) if verify_fold is None else
                VerifyGeneration(model, tokenizer, part, configs,
                                 fold=None if verify_fold == "none" else parse_folding(verify_fold))).run()
    return out


def summarise(rows: list[dict]) -> dict:
    n = len(rows)
    micro, after = sum(r["micro"] for r in rows), sum(r["after_merge"] for r in rows)
    tokens, forwards = sum(r["tokens"] for r in rows), sum(r["forwards"] for r in rows)
    kv = sum(r.get("kv_slots", 0) for r in rows), sum(r.get("kv_slots_ordinary", 0) for r in rows)
    prompts = sum(r.get("kv_slots_ordinary", 0) - r["tokens"] + 1 for r in rows)  # an ordinary cache: prompt + T - 1
    return {"answers": n, "tokens": tokens, "tau": tokens / max(1, forwards),
            "rereads": sum(r.get("rereads", 0) for r in rows) / n, "kv_ratio": kv[0] / kv[1] if kv[1] else None,
            "kv_ratio_answer": (kv[0] - prompts) / (kv[1] - prompts) if kv[1] > prompts else None,
            **{k: sum(r[k] for r in rows) / n for k in ("nll_per_token", "worst_token_nll", "rep4")},
            "micro_tokens": micro,
            "micro_ok": sum(r["micro_ok"] for r in rows) / micro if micro else None, "after_merge_tokens": after,
            "after_merge_ok": sum(r["after_merge_ok"] for r in rows) / after if after else None,
            **kind_summary(rows), **size_summary(rows)}


def kind_summary(rows: list[dict]) -> dict:
    """Where the answers' NLL under the base sits, by who wrote each token (`plausibility.token_kinds`): per kind
    the tokens, mean NLL and spikes; and the share of answers whose worst token is of each kind."""
    rows = [r for r in rows if "by_kind" in r]  # results saved before the field existed have none
    if not rows:
        return {}
    total = {k: {f: sum(r["by_kind"][k][f] for r in rows) for f in ("tokens", "nll", "spikes")} for k in KINDS}
    worst = [r["worst_kind"] for r in rows if r["worst_kind"]]
    return {"by_kind": {k: {"tokens": t["tokens"], "mean_nll": t["nll"] / t["tokens"] if t["tokens"] else None,
                            "spikes": t["spikes"]} for k, t in total.items()},
            "worst_kind_share": {k: worst.count(k) / len(worst) if worst else 0.0 for k in KINDS}}


def size_summary(rows: list[dict]) -> dict:
    """The skip path by the size of the merged slot it reads (`plausibility.after_merge_by_size`), over all answers:
    per size the tokens, the share equal to the base's greedy choice, mean NLL and spikes."""
    total: dict[str, dict] = {}
    for r in rows:
        for size, v in r.get("after_merge_by_size", {}).items():
            t = total.setdefault(size, {"tokens": 0, "ok": 0, "nll": 0.0, "spikes": 0})
            for f in t:
                t[f] += v[f]
    return {"after_merge_by_size": {size: {"tokens": t["tokens"], "ok": t["ok"] / t["tokens"],
                                           "mean_nll": t["nll"] / t["tokens"], "spikes": t["spikes"]}
                                    for size, t in sorted(total.items(), key=lambda kv: int(kv[0]))}} if total else {}


PAIRED_METRICS = ("nll_per_token", "worst_token_nll")


def setting(run: dict) -> tuple:
    """What a decode of one model varies: (gate, knob, re-read threshold, prefilter, single tail, fold, verify fold)."""
    return (run["gate"], run["confidence"], run.get("reread", 0.0), run.get("prefilter", 0.0), run.get("single_tail", 0),
            int(run.get("fold_tail", 0)), run.get("verify_fold"))


def paired(result: dict) -> list[dict]:
    """Each decode minus a reference on the same prompts, per metric: (difference, 95% interval low, high).
    References: the base's greedy and sampled answers, and the first model's decode at the same gate and knob (for
    the first model's own: re-reading, prefiltered and tailed decodes against its plain one, folded verify mode against
    plain verify mode)."""
    runs = result["runs"]
    references = [r for r in runs if r["model"] in ("base greedy", "base sampled")]
    models = [r["model"] for r in runs if not r["model"].startswith("base ")]
    first = {setting(r): r for r in runs if models and r["model"] == models[0]}
    out = []
    for run in runs:
        if run["model"].startswith("base "):
            continue
        same = first.get(setting(run))
        if same is run and any(setting(run)[2:]):  # a re-reading, prefiltered or tailed decode: against the plain one
            s = setting(run)  # (a tailed one against the paper's layout with the same re-read and prefilter first;
            if s[6] not in (None, "none"):  # a folded verify-mode decode against plain verify mode)
                same = first.get(s[:6] + ("none",))
            else:
                same = (first.get(s[:4] + (0, 0, None)) if any(s[4:6]) else None) or \
                    first.get(s[:2] + (0.0, 0.0, 0, 0, None))
        for label, ref in [(r["model"], r) for r in references] + [(models[0], same if same is not run else None)]:
            if ref is None:
                continue
            by_id = {row["id"]: row for row in ref["rows"]}
            rows = [(row, by_id[row["id"]]) for row in run["rows"]]
            line = {"model": run["model"], "gate": run["gate"], "confidence": run["confidence"],
                    "reread": run.get("reread", 0.0), "prefilter": run.get("prefilter", 0.0),
                    "single_tail": run.get("single_tail", 0), "fold_tail": int(run.get("fold_tail", 0)),
                    "verify_fold": run.get("verify_fold"), "against": label}
            for metric in PAIRED_METRICS:
                diff = paired_bootstrap([a[metric] for a, _ in rows], [b[metric] for _, b in rows])
                line[metric] = [round(x, 4) for x in diff]
            out.append(line)
    return out


def print_paired(lines: list[dict]) -> None:
    for x in lines:
        cells = "  ".join(f"{m} {d:+.3f} [{lo:+.3f}, {hi:+.3f}]" for m, (d, lo, hi) in
                          ((m, x[m]) for m in PAIRED_METRICS))
        print(f"{x['model']} [{x['gate']}] @{x['confidence']} reread {x.get('reread', 0.0)} prefilter "
              f"{x.get('prefilter', 0.0)} tail {layout_name(x.get('single_tail', 0), x.get('fold_tail', 0))}"
              f"{'' if x.get('verify_fold') is None else ' verify fold ' + x['verify_fold']} minus "
              f"{x['against']}: "
              f"{cells}", flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--paired", default=None, metavar="RESULT.json",
                        help="only print the paired differences of an earlier result file (and add them to it)")
    parser.add_argument("--models", nargs="+", default=None, help="HAMburger checkpoint folders")
    parser.add_argument("--confidence", default="0.5,0.7,0.8,0.9", help="comma list of knobs")
    parser.add_argument("--gates", default=None,
                        help="comma list of gates (stop_head, token_prob) to decode every model with (default: each "
                             "model's own)")
    parser.add_argument("--reread", default="0", help="comma list of re-read-on-doubt thresholds to decode every "
                        "model with at every knob (DecodingConfig.reread; 0 = never)")
    parser.add_argument("--prefilters", default="0", help="comma list of prefilters (HamburgerConfig.prefilter: gate "
                        "token_prob asks the MSD only while the stop head's 1 - p_stop >= this x the knob) to decode "
                        "every model with at every knob (default 0: none; the model's own setting is replaced)")
    parser.add_argument("--single-tails", default=None, help="comma list of layouts (HamburgerConfig.single_tail: a "
                        "fed group's last tokens in slots of their own; f folds it into one merged slot at the next "
                        "step, fD D steps later, HamburgerConfig.fold_tail: 0,1,1f,1f2) to decode every model with at "
                        "every knob (default: each model's own; none: no default-mode decodes, e.g. with --verify-folds only)")
    parser.add_argument("--verify-folds", default=None, help="comma list of foldings (GROUPS:WINDOW, e.g. "
                        "segments:8, forwards:4; none: plain verify mode, the base's answers) to decode every model "
                        "with in verify mode at every knob (the knob drafts); default: no verify-mode decodes")
    parser.add_argument("--categories", default="chat,math,code", help="dev prompt categories (bench_prompts)")
    parser.add_argument("--per-category", type=int, default=8, help="prompts per category")
    parser.add_argument("--max-new-tokens", type=int, default=96)
    parser.add_argument("--batch-size", type=int, default=8)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--out", default=None, help="result JSON (per-answer rows and summaries; needed with --models)")
    args = parser.parse_args()
    if args.paired:
        result = json.loads(Path(args.paired).read_text())
        result["paired"] = paired(result)
        print_paired(result["paired"])
        Path(args.paired).write_text(json.dumps(result, indent=1))
        return
    if not args.models:
        parser.error("--models is required (or --paired RESULT.json)")
    if not args.out:
        parser.error("--out is required with --models")
    torch.set_num_threads(args.threads)
    knobs = [float(c) for c in args.confidence.split(",")]
    rereads = [float(r) for r in args.reread.split(",")]
    prefilters = [float(q) for q in args.prefilters.split(",")]
    texts = [p for c in args.categories.split(",") for p in category_prompts(c, args.per_category, seed=1)]
    base, tokenizer, info = load_base(None, "float32")
    base.eval()
    prompts = [encode_prompt(tokenizer, p["prompt"]) for p in texts]
    result = {"settings": vars(args), "prompts": [p["id"] for p in texts], "base": info.spec,
              "machine": machine_info(args.threads, "float32"), "runs": []}

    def record(label: str, knob: float | None, cfgs: list[DecodingConfig], model, reread: float = 0.0,
               prefilter: float = 0.0, verify_fold: str | None = None) -> None:
        t0 = time.perf_counter()
        outs = decode(model, tokenizer, prompts, cfgs, args.batch_size, verify_fold)
        eos = eos_ids(model, tokenizer)
        rows = [{"id": p["id"], "forwards": o.forwards, "rereads": o.rereads, "kv_slots": o.kv_slots,
                 "kv_slots_ordinary": o.kv_slots_ordinary, **score(base, ids, o.token_ids, o.groups, eos)}
                for p, ids, o in zip(texts, prompts, outs)]
        verifying = verify_fold is not None
        run = {"model": label, "confidence": knob, "gate": "verify" if verifying else model.config.gate,
               "reread": reread, "prefilter": prefilter, "single_tail": 0 if verifying else model.config.single_tail,
               "fold_tail": 0 if verifying else model.config.fold_tail, "verify_fold": verify_fold,
               "temperature": cfgs[0].temperature,
               "seconds": time.perf_counter() - t0, "summary": summarise(rows), "rows": rows}
        result["runs"].append(run)
        s = run["summary"]
        mode = f"verify fold {verify_fold}" if verifying else \
            f"tail {layout_name(model.config.single_tail, model.config.fold_tail)}"
        print(f"{label} [{run['gate']}] @{knob} reread {reread} prefilter {prefilter} {mode} T{cfgs[0].temperature}: "
              f"tau {s['tau']:.3f} "
              f"rereads/answer {s['rereads']:.2f} kv_ratio {s['kv_ratio']:.3f} (answers {s['kv_ratio_answer']:.3f}) "
              f"nll {s['nll_per_token']:.3f} worst {s['worst_token_nll']:.2f} rep4 {s['rep4']:.3f} "
              f"micro_ok {s['micro_ok']} ({s['micro_tokens']} micro tokens) after_merge_ok {s['after_merge_ok']} "
              f"({s['after_merge_tokens']})", flush=True)
        print("    by kind: " + "; ".join(f"{k} {v['tokens']} tokens, mean NLL {v['mean_nll'] or 0:.3f}, {v['spikes']} "
                                          f"spikes, worst in {100 * s['worst_kind_share'][k]:.0f}% of answers"
                                          for k, v in s["by_kind"].items()), flush=True)
        if s.get("after_merge_by_size"):
            print("    after a merged slot of: " + "; ".join(
                f"{size} tokens: {v['tokens']} read, {100 * v['ok']:.0f}% the base's own, mean NLL {v['mean_nll']:.3f}, "
                f"{v['spikes']} spikes" for size, v in s["after_merge_by_size"].items()), flush=True)
        Path(args.out).write_text(json.dumps(result, indent=1))

    for i, path in enumerate(args.models):
        model, _, minfo = load_checkpoint(path)
        if minfo.fingerprint != info.fingerprint:
            raise SystemExit(f"{path} was made on another base than {info.spec}")
        model.eval()
        if i == 0:  # the references: knob 1.0 is the base's greedy decoding exactly; then the base sampled
            record("base greedy", 1.0, [DecodingConfig(args.max_new_tokens, confidence=1.0)] * len(prompts), model)
            record("base sampled", 1.0, [DecodingConfig(args.max_new_tokens, confidence=1.0, temperature=0.7,
                                                          top_p=0.9, seed=s) for s in range(len(prompts))], model)
        tails = [] if args.single_tails == "none" else \
            [parse_layout(t) for t in args.single_tails.split(",")] if args.single_tails \
            else [(model.config.single_tail, model.config.fold_tail)]
        for gate, (tail, fold) in [(g, t) for g in (args.gates.split(",") if args.gates else [model.config.gate])
                                   for t in tails]:
            model.config.gate, model.config.single_tail, model.config.fold_tail = gate, tail, fold
            model.config.validate()
            for knob in knobs:
                for reread in rereads:
                    for prefilter in prefilters:
                        model.config.prefilter = prefilter
                        record(path, knob, [DecodingConfig(args.max_new_tokens, confidence=knob, reread=reread)]
                               * len(prompts), model, reread, prefilter)
        for fold in args.verify_folds.split(",") if args.verify_folds else []:
            for knob in knobs:
                record(path, knob, [DecodingConfig(args.max_new_tokens, confidence=knob)] * len(prompts), model,
                       verify_fold=fold)
    result["paired"] = paired(result)
    print_paired(result["paired"])
    Path(args.out).write_text(json.dumps(result, indent=1))


if __name__ == "__main__":
    main()
