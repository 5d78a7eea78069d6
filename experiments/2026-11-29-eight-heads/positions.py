"""Where the worst tokens lie: every sampled answer of rows 360-479 (the base's own samples, fh4, fh8, fh4-kv62) read
again by the unchanged base, teacher-forced on its re-tokenized text; per answer span (tokens 0-59, before the first
fold can act; 60-134, where the default fold keeps a fixed 60-token window; 135-255, where the window is 45% of the
answer; the last two cut finer) the mean over answers reaching it of the span's largest token NLL, and the share of
answers whose worst token lies in it. Every answer's token NLLs go to positions.jsonl.gz. A diagnostic: it chooses
nothing.

    python experiments/2026-11-29-eight-heads/positions.py > experiments/2026-11-29-eight-heads/positions.txt
"""

from __future__ import annotations

import gzip
import json
import sys
from pathlib import Path

import torch
from tqdm import tqdm

from hamburger.core.loading import load_model
from hamburger.engine.prompt import encode_prompt
from hamburger.eval.plausibility import token_nll

HERE = Path(__file__).resolve().parent
CACHE = HERE.parent / "2026-11-28-full-head-cache"
RUNS = {"base-sampled": (CACHE / "eval-rows360-480-fh4", "base-sampled"),
        "fh4": (CACHE / "eval-rows360-480-fh4", "verify-fold-sampled"),
        "fh8": (HERE / "eval-rows360-480-fh8", "verify-fold-sampled"),
        "fh4-kv62": (HERE / "eval-rows360-480-fh4-kv62", "verify-fold-sampled")}
SPANS = ((0, 60), (60, 80), (80, 100), (100, 135), (135, 180), (180, 256))


def main() -> None:
    torch.set_num_threads(2)
    _, tokenizer, _, reference = load_model(None, reference=True)
    questions = [json.loads(line)["question"] for line in (CACHE / "gsm8k_dev_360_480.jsonl").open()]
    dump = gzip.open(HERE / "positions.jsonl.gz", "wt")
    print("Each span: the mean over answers reaching it of its largest token NLL (those answers), the share of answers "
          "whose worst token lies in it\n")
    print("| answers | n | recorded worst token = re-read (within 0.01) | "
          + " | ".join(f"tokens {a}-{b - 1}" for a, b in SPANS)
          + " |\n|---|---|---|" + "---|" * len(SPANS))
    for name, (run, method) in RUNS.items():
        rows = [r for line in (run / "examples.jsonl").open() if (r := json.loads(line))["method"] == method]
        maxima: list[list[float]] = [[] for _ in SPANS]
        worst_in = [0] * len(SPANS)
        same = 0
        for r in tqdm(rows, desc=name, file=sys.stderr):
            prompt = encode_prompt(tokenizer, questions[int(r["id"].split(":")[1])])
            answer = tokenizer.encode(r["text"], add_special_tokens=False)
            with torch.inference_mode():
                nll = token_nll(reference.base, prompt, answer)
            dump.write(json.dumps({"arm": name, "id": r["id"], "draw": r.get("draw", 0),
                                   "nll": [round(x, 3) for x in nll]}) + "\n")
            same += abs(max(nll, default=0.0) - r["worst_token_nll"]) < 0.01
            for k, (a, b) in enumerate(SPANS):
                if len(nll) > a:
                    maxima[k].append(max(nll[a:b]))
            at = max(range(len(nll)), key=nll.__getitem__) if nll else 0
            worst_in[next(k for k, (a, b) in enumerate(SPANS) if at < b or b == SPANS[-1][1])] += 1
        cells = [f"{sum(m) / len(m):.3f} ({len(m)}), {w / len(rows):.2f}" for m, w in zip(maxima, worst_in)]
        print(f"| {name} | {len(rows)} | {same / len(rows):.2f} | " + " | ".join(cells) + " |")
    dump.close()


if __name__ == "__main__":
    main()
