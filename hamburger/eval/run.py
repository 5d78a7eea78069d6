"""`hamburger eval`: quality of HAMburger next to its base model, same prompts, greedy, every knob.

Tasks
  gsm8k      exact match of the final number (default: the fixed dev split, the last 500 GSM8K rows)
  humaneval  pass@1, each completion executed in a bubblewrap sandbox (no network, read-only system,
             unprivileged user, memory/CPU/time limits; see hamburger/eval/sandbox.py); eval refuses to
             run the task where that isolation is unavailable
  chat       agreement with the base model's own greedy answer (exact, ROUGE-L, chrF) on dev prompts,
             and the held-out loss / token accuracy of those base answers under the HAMburger model
  ifeval     IFEval (a test set) prompt- and instruction-level accuracy, strict and loose (see `ifeval`)
Every answer of every task is also scored by its plausibility under the unchanged base (NLL per token,
worst-token NLL, repeated-4-gram rate; see `plausibility`), and the base's own sampled answers
(temperature 0.7, top-p 0.9, seed = the prompt's position) are one more method, "base-sampled", the
reference for "as good as the base". With `--sample` every HAMburger method is also decoded that way,
as "METHOD-sampled", and held to the base's sampled answers. Every difference from the base gets a paired
bootstrap 95% interval over prompts and a verdict against its target band (see `paired`), in summary.md.
The base model (the unchanged one, when the checkpoint adapted it with LoRA) is decoded by our own
loop at confidence 1.0, which is token-for-token the base's greedy decoding (tested). Each task also
reports tau and decode tok/s. `--endpoint URL` adds an OpenAI-compatible server (e.g. `hamburger
serve`) as one more method on the same prompts.
"""

from __future__ import annotations

import json
import sys
import time
from dataclasses import asdict, dataclass
from functools import partial
from pathlib import Path

import torch

from hamburger.data.io import check_meta, file_sha256, meta_path, read_jsonl, read_prompt_file
from hamburger.errors import HamburgerError
from hamburger.engine.generate import Generation
from hamburger.engine.lookup import LOOKUP_TOKENS
from hamburger.engine.prompt import encode_prompt
from hamburger.engine.sampling import DecodingConfig
from hamburger.eval.sandbox import Limits, require
from hamburger.eval.scorers import chrf, extract_final_number, gsm8k_reference, humaneval_program, rouge_l, run_sandboxed

TASKS = ("gsm8k", "humaneval", "chat", "ifeval")
IFEVAL_KEYS = ("prompt_strict", "prompt_loose", "inst_strict", "inst_loose")
SAMPLE_CHOICES = ("also", "only")  # `run_eval`'s sampled methods: beside the greedy ones, or instead of them
DRAW_SEED_STRIDE = 1_000_000  # draw k of a sampled method seeds prompt i with i + k * this (`run_eval`'s draws)


@dataclass
class Example:
    task: str
    id: str
    prompt: str
    gold: str | dict | None = None


def gsm8k_examples(path: str | None, limit: int) -> list[Example]:
    if path:
        rows = read_jsonl(path)
        if any(not isinstance(r, dict) or "question" not in r or "answer" not in r for r in rows):
            raise HamburgerError(f"{path}: every line needs 'question' and 'answer' (GSM8K format)")
        items = [(f"gsm8k-file:{i}", r["question"], r["answer"]) for i, r in enumerate(rows)]
    else:
        from hamburger.data.prompts import build_prompts

        items = [(r["id"], r["prompt"], r["answer"]) for r in build_prompts(["gsm8k"], "dev", seed=0)]
    return [Example("gsm8k", i, q, gsm8k_reference(a)) for i, q, a in items[:limit]]


def humaneval_examples(limit: int) -> list[Example]:
    from hamburger.bench.prompts import humaneval_problems, humaneval_request

    return [Example("humaneval", r["task_id"], humaneval_request(r), {k: r[k] for k in ("prompt", "test", "entry_point")})
            for r in humaneval_problems()[:limit]]


def chat_examples(limit: int, path: str | None = None) -> list[Example]:
    if path:
        rows = read_prompt_file(path)
        return [Example("chat", str(r.get("id", f"chat-file:{i}")), r["prompt"]) for i, r in enumerate(rows[:limit])]
    from hamburger.bench.prompts import category_prompts

    return [Example("chat", r["id"], r["prompt"]) for r in category_prompts("chat", limit, seed=1)]


def ifeval_examples(limit: int) -> list[Example]:
    from hamburger.eval.ifeval import load_ifeval, require_punkt

    require_punkt()  # before any generation: a missing tokenizer must not cost a whole run
    return [Example("ifeval", f"ifeval:{r['key']}", r["prompt"], r) for r in load_ifeval(limit=limit)]


def score(example: Example, text: str, base_text: str | None, timeout: float) -> dict:
    if example.task == "gsm8k":
        return {"correct": float(extract_final_number(text) == example.gold)}
    if example.task == "ifeval":
        from hamburger.eval.ifeval import score_ifeval

        return score_ifeval(example.gold, text)
    if example.task == "humaneval":
        passed, reason = run_sandboxed(humaneval_program(example.gold, text), timeout)
        return {"passed": float(passed), "reason": reason}
    return {"exact": float(text == base_text), "rouge_l": rouge_l(text, base_text or ""),
            "chrf": chrf(text, base_text or "")}


def heldout_loss(model, prompt_ids: list[list[int]], responses: list[list[int]]) -> dict:
    """Teacher-forced loss and token accuracy of base answers, cut by the base's own entropy (decreasing_v2)."""
    from hamburger.core.packing import TrainBatch
    from hamburger.data.segment import decreasing_v2

    losses, correct, total = [], 0, 0
    with torch.no_grad():
        for p, r in zip(prompt_ids, responses):
            if not r:
                continue
            single = TrainBatch([p], [r], [[1] * len(r)])
            logp = torch.log_softmax(model.teacher_logits(single), -1)
            entropy = (-(logp.exp() * logp).sum(-1)).tolist()
            groups = decreasing_v2(entropy, model.config.max_steps)
            out = model.training_forward(TrainBatch([p], [r], [groups]))
            losses.append((out.token_loss.item(), len(r)))
            correct += (out.predictions == out.targets).sum().item()
            total += len(r)
    tokens = sum(n for _, n in losses)
    return {"heldout_loss": sum(l * n for l, n in losses) / max(1, tokens), "heldout_token_acc": correct / max(1, total)}


@dataclass
class Answer:
    """One generated answer, from the local engine or an OpenAI-compatible endpoint."""

    text: str
    tokens: int
    forwards: int
    decode_s: float
    first_group: int
    token_ids: list[int] | None = None  # None from an endpoint: the text is tokenized for plausibility
    kv_slots: int | None = None  # the base's KV entries held at the end (None from an endpoint)
    kv_slots_ordinary: int | None = None  # ... and what a one-token-per-forward decode holds there


@dataclass
class Endpoint:
    """An OpenAI-compatible server evaluated next to the local methods (e.g. `hamburger serve`)."""

    url: str
    api_key: str | None = None
    model: str = "hamburger"

    def answer(self, prompts: list[str], max_new_tokens: int) -> list[Answer]:
        try:
            from openai import OpenAI
        except ImportError as e:
            raise HamburgerError("--endpoint needs the `openai` package (pip install openai)") from e
        client = OpenAI(base_url=self.url, api_key=self.api_key or "none", max_retries=0, timeout=600)
        out = []
        for prompt in prompts:
            start = time.perf_counter()
            r = client.chat.completions.create(model=self.model, messages=[{"role": "user", "content": prompt}],
                                               temperature=0, max_tokens=max_new_tokens)
            latency = time.perf_counter() - start
            extension = (r.usage.model_extra or {}).get("hamburger") or {}
            tokens = r.usage.completion_tokens
            out.append(Answer(r.choices[0].message.content or "", tokens, extension.get("base_forwards", tokens),
                              latency, 0))
        return out


def run_eval(model, tokenizer, tasks: list[str], confidences: list[float], limit: int, max_new_tokens: int,
             gsm8k_file: str | None = None, timeout: float = 10.0, batch_size: int = 4,
             endpoint: Endpoint | None = None, reference=None, chat_file: str | None = None,
             sampled: bool = True, verify: bool = False, verify_fold: str | None = None,
             verify_confidence: float | None = None, verify_lookup: int = LOOKUP_TOKENS,
             reused: dict[tuple[str, str], list[dict]] | None = None, sample: str | None = None,
             verify_ngrams: int | None = None, draws: int = 1, fold_model=None, full_heads: list | None = None,
             progress: Path | None = None):
    """Per-example records and a summary per (task, method); the endpoint, if any, is one more method
    (its speed figures are client-side latencies, not decode times). The "base" method decodes
    ``reference`` (the unchanged base, default ``model``) at confidence 1.0; with ``sampled``, "base-sampled"
    samples it (`plausibility.SAMPLED`, seed = the prompt's position). With ``verify``, "verify" is lossless verify
    mode: ``model``'s MSD drafts and ``reference``'s unchanged base verifies (its greedy text is the base's). With
    ``verify_fold`` (a `folding.parse_folding` spec), "verify-fold" is verify mode on ``fold_model`` (default
    ``model`` itself, whose adapters read the merged slots; `loading.fold_model`), its older tokens folded into one KV
    slot per group, ``full_heads`` ((layer, key/value head) pairs; None: the fold model's own) keeping every slot
    (`engine/full_heads.py`). Both draft while the stop head's 1 - p_stop >= ``verify_confidence`` (None: verify mode's
    default) and, with ``verify_lookup`` N, by prompt lookup
    (up to N tokens) where the text's last n-gram occurred before (`lookup.PromptLookup`), else from ``model``'s
    n-gram table (up to ``verify_ngrams`` tokens; None: the table's own count; 0: none; `ngrams.model_ngrams`).
    ``reused`` ((task, method) -> records, `reused_base`): the base's and base-sampled answers of an earlier run, taken
    as they are instead of decoding them again. ``sample`` "also": every method but the base's and the endpoint is
    decoded a second time as "METHOD-sampled", with base-sampled's settings and seeds (so, at knob 1.0, base-sampled's
    answers); "only": sampled instead of greedy. ``draws`` K: every sampled method answers each prompt K times, draw
    k seeded with the prompt's position + k * `DRAW_SEED_STRIDE` (draw 0: the seeds of a one-draw run); its records
    carry "draw", its summary averages over every draw, and `paired.compare` pairs per-prompt means over the draws.
    ``progress``: a jsonl that every batch's answers are appended to as they come (the endpoint's apart), and whose
    answers are taken instead of decoded again: a killed run goes on where it stopped (`evaluate` checks its
    settings)."""
    from tqdm import tqdm

    from hamburger.data.io import append_jsonl

    if "humaneval" in tasks:
        require(Limits(timeout=timeout))  # no isolation, no code execution: refuse before any work
    from hamburger.engine.prompt import eos_ids
    from hamburger.eval.paired import BASE_METHODS, SAMPLED_SUFFIX, is_sampled
    from hamburger.eval.plausibility import SAMPLED, plausibility

    builders = {"gsm8k": lambda: gsm8k_examples(gsm8k_file, limit), "humaneval": lambda: humaneval_examples(limit),
                "chat": lambda: chat_examples(limit, chat_file), "ifeval": lambda: ifeval_examples(limit)}
    judge = reference or model
    eos = set(eos_ids(judge, tokenizer))
    if sample not in (None, *SAMPLE_CHOICES):
        raise HamburgerError(f"sample must be one of {', '.join(SAMPLE_CHOICES)}, not {sample!r}")
    if sample and not sampled:
        raise HamburgerError("sampled methods are held to the base's sampled answers: drop --no-base-sampled")
    if draws < 1 or (draws > 1 and not sampled):
        raise HamburgerError(f"draws must be >= 1 and needs sampled methods (base-sampled), not {draws}")
    methods = [("base", 1.0)] + ([(BASE_METHODS[1], 1.0)] if sampled else [])
    methods += [(f"hamburger@{c:g}", c) for c in confidences]
    engines = {}  # the engine of each method that does not run `Generation`
    if verify or verify_fold:
        from hamburger.engine.lookup import PromptLookup
        from hamburger.engine.ngrams import model_ngrams
        from hamburger.engine.verify import VerifyGeneration, on_base

        lookup = PromptLookup(tokens=verify_lookup).validate() if verify_lookup else None
        ngrams = model_ngrams(model, verify_ngrams)
    if verify:
        methods.append(("verify", verify_confidence))
        drafter = on_base(model, judge)
        engines["verify"] = partial(VerifyGeneration, lookup=lookup, ngrams=ngrams, draft_vocab=model.draft_vocab)
    if verify_fold:
        from hamburger.engine.folding import parse_folding

        folding = parse_folding(verify_fold).validate(model.config.max_steps)  # (refused before any decoding)
        methods.append(("verify-fold", verify_confidence))
        engines["verify-fold"] = partial(VerifyGeneration, fold=folding, lookup=lookup, ngrams=ngrams,
                                         draft_vocab=model.draft_vocab, full_heads=full_heads)
    if sample:
        twins = [(name + SAMPLED_SUFFIX, c) for name, c in methods if name not in BASE_METHODS]
        methods = methods[:2] + twins if sample == "only" else methods + twins
    if endpoint is not None:
        methods.append(("endpoint", None))
    kept = {(a.pop("task"), a.pop("method"), a.pop("draw"), a.pop("id")): Answer(**a)
            for a in (read_jsonl(progress, tail="cut", missing_ok=True) if progress else [])}
    records, summary = [], []
    for task in tasks:
        examples, ids, candidates = [], [], builders[task]()
        for e in candidates:
            prompt_ids = encode_prompt(tokenizer, e.prompt)
            if len(prompt_ids) < model.context_length:  # longer prompts are skipped and counted
                examples.append(e)
                ids.append(prompt_ids)
        skipped = len(candidates) - len(examples)
        if not examples:
            raise HamburgerError(f"task {task}: no example fits the model's context of {model.context_length} tokens")
        base_texts: list[str] = []
        base_ids: list[list[int]] = []
        for name, confidence in methods:
            rows = []
            for draw in range(draws if is_sampled(name) else 1):
                earlier = [r for r in (reused or {}).get((task, name), []) if r.get("draw", 0) == draw] or None
                if earlier is not None:
                    if [r["id"] for r in earlier] != [e.id for e in examples]:
                        raise HamburgerError(f"the reused {name} answers of task {task} are for other prompts (ids "
                                             f"{[r['id'] for r in earlier][:3]}..., here "
                                             f"{[e.id for e in examples][:3]}...)")
                    if name == "base":
                        base_texts, base_ids = [r["text"] for r in earlier], [r.get("token_ids") for r in earlier]
                        if task == "chat" and confidences and None in base_ids:
                            raise HamburgerError("the chat task's held-out loss needs the base's own token ids, which "
                                                 "evals before 2026-12-05 did not store: evaluate hamburger knobs on "
                                                 "chat without reusing these base answers")
                    rows += [dict(r) for r in earlier]
                    continue
                if name == "endpoint":
                    answers = endpoint.answer([e.prompt for e in examples], max_new_tokens)
                else:
                    extra = SAMPLED if is_sampled(name) else {}
                    kind = name.removesuffix(SAMPLED_SUFFIX) if name not in BASE_METHODS else name
                    cfgs = [DecodingConfig(max_new_tokens=max_new_tokens, confidence=confidence,
                                           seed=i + draw * DRAW_SEED_STRIDE if extra else None, **extra)
                            for i in range(len(ids))]
                    runner = (judge if name in BASE_METHODS else drafter if kind == "verify"
                              else fold_model or model if kind == "verify-fold" else model)
                    engine = engines.get(kind, Generation)
                    answers = []
                    desc = f"{task} {name}" + (f" draw {draw}" if draws > 1 and extra else "")
                    for start in tqdm(range(0, len(ids), batch_size), desc=desc, unit="batch", leave=False):
                        chunk = slice(start, start + batch_size)
                        earlier = [kept.get((task, name, draw, e.id)) for e in examples[chunk]]
                        if None not in earlier:  # (a run before this one decoded them)
                            answers += earlier
                            continue
                        new = [Answer(r.text, r.tokens, r.forwards, r.decode_s, r.groups[0], r.token_ids, r.kv_slots,
                                      r.kv_slots_ordinary) for r in engine(runner, tokenizer, ids[chunk],
                                                                           cfgs[chunk]).run()]
                        if progress:
                            append_jsonl(progress, [{"task": task, "method": name, "draw": draw, "id": e.id,
                                                     **asdict(a)} for e, a in zip(examples[chunk], new)])
                        answers += new
                    if name == "base":
                        base_texts, base_ids = [a.text for a in answers], [a.token_ids for a in answers]
                for e, p, a, base_text in zip(examples, ids, answers, base_texts):
                    answer_ids = a.token_ids if a.token_ids is not None else tokenizer(
                        a.text, add_special_tokens=False)["input_ids"]
                    rows.append({"task": task, "id": e.id, "method": name, "confidence": confidence,
                                 **({"draw": draw} if is_sampled(name) else {}), "text": a.text,
                                 "tokens": a.tokens, "forwards": a.forwards, "decode_s": a.decode_s,
                                 "first_group": a.first_group, **score(e, a.text, base_text, timeout),
                                 # (the base's own ids: a later run reusing these answers scores knobs against them)
                                 **({"token_ids": a.token_ids} if name == "base" and a.token_ids is not None else {}),
                                 **({} if a.kv_slots is None else {"kv_slots": a.kv_slots,
                                                                   "kv_slots_ordinary": a.kv_slots_ordinary}),
                                 **plausibility(judge.base, p, answer_ids, eos)})
            records += rows
            entry = {"task": task, "method": name, "confidence": confidence, "examples": len(examples),
                     **({"draws": len(rows) // len(examples)} if is_sampled(name) else {}),
                     "skipped_too_long": skipped,
                     "tau": sum(r["tokens"] for r in rows) / max(1, sum(r["forwards"] for r in rows)),
                     "decode_tok_s": sum(r["tokens"] - r["first_group"] for r in rows)
                     / max(1e-9, sum(r["decode_s"] for r in rows))}
            if all("kv_slots" in r for r in rows):  # (not from an endpoint, nor reused rows of older runs)
                # the whole cache at the answers' ends, prompt included, against an ordinary one's (`bench`'s kv_vs_hf)
                entry["kv_share"] = sum(r["kv_slots"] for r in rows) / max(1, sum(r["kv_slots_ordinary"] for r in rows))
                # the cache less an ordinary prompt's over one slot per answer token but the last (`bench`'s per-token
                # figure): the answers' share only while the prompt stays whole, as a fold's prompt=N does not
                entry["answer_kv_share"] = sum(r["kv_slots"] - r["kv_slots_ordinary"] + r["tokens"] - 1
                                               for r in rows) / max(1, sum(r["tokens"] - 1 for r in rows))
            for key in ("correct", "passed", "exact", "rouge_l", "chrf", "nll_per_token", "worst_token_nll", "rep4"):
                if key in rows[0]:
                    entry[key] = sum(r[key] for r in rows) / len(rows)
            if task == "ifeval":
                from hamburger.eval.ifeval import aggregate

                entry.update(aggregate(rows))
            if task == "chat" and name.startswith("hamburger@") and not is_sampled(name):  # (teacher-forced)
                entry.update(heldout_loss(model, ids, base_ids))
            summary.append(entry)
    return records, summary


PROGRESS = "answers.partial.jsonl"  # (in an eval's folder while it runs: `run_eval`'s progress)
QUALITY = {"gsm8k": "correct", "humaneval": "passed", "chat": "rouge_l", "ifeval": "inst_strict"}


def write_outputs(out: Path, records: list[dict], summary: list[dict], meta: dict, bands=None) -> Path:
    from hamburger.eval.paired import DEFAULT_BANDS, band_lines, compare, held_reference, per_type, type_lines

    bands = bands or DEFAULT_BANDS
    comparisons, types = compare(records, bands), per_type(records)
    meta = dict(meta, bands=[asdict(b) for b in bands])
    out.mkdir(parents=True, exist_ok=True)
    with open(out / "examples.jsonl", "w", encoding="utf-8") as f:
        for r in records:
            f.write(json.dumps(r) + "\n")
    (out / "summary.json").write_text(json.dumps({"meta": meta, "summary": summary, "comparisons": comparisons,
                                                  "ifeval_types": types}, indent=2) + "\n")
    lines = [f"# Quality: {meta['model']} (base {meta['base']})", "",
             "| task | method | examples | score | tau | decode tok/s | KV (whole cache) | delta vs base | NLL/token "
             "| worst-token NLL | rep4 |",
             "|---|---|---|---|---|---|---|---|---|---|---|"]
    for s in summary:
        key = QUALITY[s["task"]]
        base = next(b for b in summary if b["task"] == s["task"] and b["method"] == held_reference(s["method"]))
        kv = f"{s['kv_share']:.3f}" if "kv_share" in s else "-"
        lines.append(f"| {s['task']} ({key}) | {s['method']} | {s['examples']} | {100 * s[key]:.1f} | {s['tau']:.2f} | "
                     f"{s['decode_tok_s']:.1f} | {kv} | {100 * (s[key] - base[key]):+.1f} | {s['nll_per_token']:.2f} | "
                     f"{s['worst_token_nll']:.1f} | {s['rep4']:.2f} |")
    if any(held_reference(s["method"]) != "base" for s in summary):
        lines += ["", "A sampled method's delta is vs base-sampled (same settings, same seeds)."]
    if meta.get("draws", 1) > 1:
        lines += ["", f"Sampled methods answered each prompt {meta['draws']} times (seeds differ by draw): their "
                      "figures average every draw, and the paired intervals pair per-prompt means over the draws."]
    ifeval = [s for s in summary if s["task"] == "ifeval"]
    if ifeval:
        lines += ["", "## IFEval accuracy (%)", "",
                  "| method | prompt strict | prompt loose | inst strict | inst loose |", "|---|---|---|---|---|"]
        lines += [f"| {s['method']} | " + " | ".join(f"{100 * s[k]:.1f}" for k in IFEVAL_KEYS) + " |" for s in ifeval]
    lines += ["", "## Differences from the base, paired bootstrap 95% intervals over prompts", "",
              "Bands: " + "; ".join(b.describe() for b in bands) + ". Verdict: inside = the whole interval is in the "
              "band, outside = none of it, undecided = it straddles the band's edge.", ""] + band_lines(comparisons)
    if types:
        lines += ["", "## IFEval instruction-level strict accuracy per instruction type, vs base greedy (a sampled "
                  "method: vs base-sampled)", ""]
        lines += type_lines(types)
    (out / "summary.md").write_text("\n".join(lines) + "\n")
    _plot(out, summary)
    return out / "summary.md"


def _plot(out: Path, summary: list[dict]) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(5.5, 3.8))
    for task in dict.fromkeys(s["task"] for s in summary):
        rows = sorted((s for s in summary if s["task"] == task), key=lambda s: s["tau"])
        ax.plot([s["tau"] for s in rows], [100 * s[QUALITY[task]] for s in rows], "o-", label=f"{task}")
    ax.set(xlabel="tau (tokens per base forward)", ylabel="score (%)", title="quality vs tau across confidence")
    ax.legend()
    fig.tight_layout()
    fig.savefig(out / "quality_vs_tau.png", dpi=120)
    plt.close(fig)


REUSE_KEYS = ("fingerprint", "max_new_tokens", "gsm8k_file", "chat_file")  # (what base answers depend on)


def run_meta(model_dir: str | Path | None, info, limit: int, max_new_tokens: int, gsm8k_file: str | None = None,
             chat_file: str | None = None) -> dict:
    """The meta every eval folder starts with: the checkpoint, its base (``info``, `loading.load_model`'s) and the
    settings `reused_base` checks before a later run takes this run's base answers."""
    return {"model": Path(model_dir).name if model_dir else "default", "base": Path(info.spec).name,
            "fingerprint": info.fingerprint, "limit": limit, "max_new_tokens": max_new_tokens,
            "gsm8k_file": gsm8k_file, "chat_file": chat_file}


def reused_base(folder: str | Path, meta: dict) -> dict[tuple[str, str], list[dict]]:
    """The base's and base-sampled records of the earlier eval in ``folder``, by (task, method), if that run decoded
    the same base (weights fingerprint) with the same settings as ``meta`` (max_new_tokens, the task files);
    otherwise a `HamburgerError` that names the difference."""
    from hamburger.eval.paired import BASE_METHODS

    folder = Path(folder)
    try:
        earlier = json.loads((folder / "summary.json").read_text())["meta"]
        rows = read_jsonl(folder / "examples.jsonl")
    except (OSError, ValueError, KeyError) as e:
        raise HamburgerError(f"no earlier eval to reuse in {folder} (summary.json and examples.jsonl): {e}") from None
    for key in REUSE_KEYS:
        if earlier.get(key) != meta[key]:
            raise HamburgerError(f"cannot reuse the base's answers of {folder}: its {key} is {earlier.get(key)!r}, "
                                 f"here {meta[key]!r}")
    out: dict[tuple[str, str], list[dict]] = {}
    for r in rows:
        if r["method"] in BASE_METHODS:
            out.setdefault((r["task"], r["method"]), []).append(r)
    return out


def resumable(out: str | Path, meta: dict, model_dir: str | Path | None) -> Path:
    """The progress file of an eval into the folder ``out`` (`run_eval`'s ``progress``), made with the settings
    ``meta`` and the checkpoint ``model_dir`` (None: the bundled one) as its files are now (their contents' digests:
    one trained again in place decodes otherwise, one copied or moved elsewhere does not): the answers of a killed run
    with the same ones are in it; others are refused while it is there."""
    from hamburger.core.loading import default_model

    files = sorted(p for p in Path(model_dir or default_model()).iterdir() if p.is_file())
    meta = {**meta, "checkpoint_files": {p.name: file_sha256(p) for p in files}}
    progress, meta = Path(out) / PROGRESS, json.loads(json.dumps(meta))  # (as the sidecar reads back)
    progress.parent.mkdir(parents=True, exist_ok=True)
    done = read_jsonl(progress, tail="cut", missing_ok=True)
    check_meta(progress, meta, tuple(meta), bool(done))
    if done:
        print(f"resuming: {len(done)} answers of an earlier run in {progress}", file=sys.stderr)
    return progress


def finished(progress: Path) -> None:
    """The run's outputs are written: its progress file goes."""
    progress.unlink(missing_ok=True)  # (no answer decoded: none written)
    meta_path(progress).unlink()


def evaluate(out: str | Path, tasks: list[str], confidences: list[float], model_dir: str | None = None, *,
             limit: int = 50, max_new_tokens: int = 256, gsm8k_file: str | None = None, chat_file: str | None = None,
             timeout: float = 10.0, batch_size: int = 4, endpoint: Endpoint | None = None, verify: bool = False,
             base_sampled: bool = True, bands=None, dtype: str = "float32", device: str = "cpu",
             base: str | None = None, verify_fold: str | None = None, verify_confidence: float | None = None,
             verify_lookup: int = LOOKUP_TOKENS, reuse_base: str | Path | None = None,
             sample: str | None = None, verify_ngrams: int | None = None, draws: int = 1,
             full_heads: list | None = None) -> Path:
    """`run_eval` on the checkpoint ``model_dir`` (default: the bundled model) next to its unchanged base, the
    outputs (examples.jsonl, summary.json/.md, the plot) written to ``out``; ``bands``: `paired.Band`s (default
    `paired.DEFAULT_BANDS`); ``reuse_base``: an earlier eval's folder whose base and base-sampled answers (and their
    scores and timings) are taken instead of decoded again (`reused_base`); ``sample``: the sampled methods
    (`run_eval`); ``draws``: the answers of each sampled method per prompt (`run_eval`); ``full_heads``: verify-fold's
    full heads (`run_eval`; None: the checkpoint's). Returns summary.md."""
    from hamburger.bench.machine import machine_info
    from hamburger.core.loading import fold_model, load_model
    from hamburger.engine.folding import parse_folding
    from hamburger.engine.ngrams import model_ngrams

    bad = [t for t in tasks if t not in TASKS]
    if bad:
        raise HamburgerError(f"unknown task(s) {bad}; choose from {', '.join(TASKS)}")
    if full_heads is not None and not verify_fold:
        raise HamburgerError("full heads keep slots a fold takes out: they need --verify-fold")
    for c in confidences + ([verify_confidence] if verify_confidence is not None else []):
        DecodingConfig(confidence=c).validate()
    if "humaneval" in tasks:
        require(Limits(timeout=timeout))
    model, tokenizer, info, reference = load_model(model_dir, dtype, base, True, device)
    fold_runner = model if not verify_fold else fold_model(model_dir, parse_folding(verify_fold), model, dtype, base)
    machine = machine_info(torch.get_num_threads(), dtype, model.device.type)  # (the commit whose code runs)
    meta = {**run_meta(model_dir, info, limit, max_new_tokens, gsm8k_file, chat_file), "verify_fold": verify_fold,
            "verify_confidence": verify_confidence, "verify_lookup": verify_lookup if verify or verify_fold else None,
            "verify_ngrams": ((t.tokens if (t := model_ngrams(model, verify_ngrams)) else 0)
                              if verify or verify_fold else None),  # (the most tokens a table draft holds)
            "reused_base": str(reuse_base) if reuse_base else None, "sample": sample, "draws": draws}
    reused = reused_base(reuse_base, meta) if reuse_base else None
    progress = resumable(out, {**meta, "dtype": dtype, "device": device, "full_heads": full_heads}, model_dir)
    records, summary = run_eval(model, tokenizer, tasks, confidences, limit, max_new_tokens, gsm8k_file, timeout,
                                batch_size, endpoint, reference, chat_file, base_sampled, verify, verify_fold,
                                verify_confidence, verify_lookup, reused, sample, verify_ngrams, draws, fold_runner,
                                full_heads, progress)
    meta["fold_reader"] = fold_runner is not model  # (verify-fold decoded with the checkpoint's fold reader)
    meta["fold_reader_sampled_only"] = fold_runner.fold_reader_sampled_only  # (... on its sampled rows only)
    if verify_fold:  # (the heads verify-fold kept whole)
        meta["full_heads"] = [list(h) for h in (fold_runner.config.full_heads if full_heads is None else full_heads)]
    meta["machine"] = machine
    written = write_outputs(Path(out), records, summary, meta, bands)
    finished(progress)
    return written
