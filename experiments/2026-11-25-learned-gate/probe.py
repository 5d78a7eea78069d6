"""Headroom probe for a learned micro-token gate (issue 19, item 5: a stop head that earns its merges).

Teacher-forced on held-out segmented rows, in a chosen layout, the MSD runs after every slot over the next
max_steps tokens (`training_forward(windows=True)`, the population decoding meets). For each micro token (2..k)
it records signals known when the gate decides, and whether the MSD's argmax is the answer's token (the base's own
greedy answer). It compares two gates by 2-fold cross-validation over rows:
  * token_prob: the MSD's probability of its argmax (today's gate);
  * learned: a logistic regression over a few signals (listed in FEATURES).
Reports AUROC, and the teacher-forced tau/error curve: per window the group keeps micro tokens while the gate
passes (stops at the first refusal), tau = 1 + mean kept, error = wrong kept tokens per emitted token.

    python experiments/2026-11-25-learned-gate/probe.py --model CKPT --data VAL.jsonl --layout 1f2 --out R.json
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
from benchmarks.gate_ranking import auroc  # noqa: E402
from benchmarks.skip_path_split import load_in_layout  # noqa: E402
from hamburger.bench.machine import machine_info  # noqa: E402
from hamburger.train.batching import load_rows, to_batch  # noqa: E402

FEATURES = ("logp_top", "entropy", "margin", "stop_go", "logp_prev", "micro_2", "micro_3", "logp_top*micro_2",
            "logp_top*micro_3")


def window_signals(model, rows, batch_size: int = 4) -> list[dict]:
    """Per window (one per slot): the signals and rightness of its micro tokens, in order, and its row."""
    windows = []
    for start in range(0, len(rows), batch_size):
        part = rows[start:start + batch_size]
        with torch.no_grad():
            out = model.training_forward(to_batch(part), windows=True)
        logp = out.token_logits.log_softmax(-1)
        top2 = logp.topk(2, -1).values
        entropy = -(logp.exp() * logp).sum(-1)
        right = (out.predictions == out.targets).tolist()
        index = out.micro_index.tolist()
        go = (-out.stop_logits).tolist()
        cols = [top2[:, 0].tolist(), entropy.tolist(), (top2[:, 0] - top2[:, 1]).tolist()]
        # windows in order: rows in order, so a window's row follows from its position among the part's rows
        row_of_window = [start + i for i, r in enumerate(part) for _ in r.groups]
        w = -1
        for t, j in enumerate(index):
            if j == 0:
                w += 1
                windows.append({"row": row_of_window[w], "tokens": []})
                continue
            windows[-1]["tokens"].append({"right": right[t], "j": j + 1, "logp_top": cols[0][t],
                                          "entropy": cols[1][t], "margin": cols[2][t], "stop_go": go[t - 1],
                                          "logp_prev": cols[0][t - 1]})
    return windows


def features(tok: dict) -> list[float]:
    m2, m3 = float(tok["j"] == 2), float(tok["j"] == 3)
    return [tok["logp_top"], tok["entropy"], tok["margin"], max(-20.0, min(20.0, tok["stop_go"])), tok["logp_prev"],
            m2, m3, tok["logp_top"] * m2, tok["logp_top"] * m3]


def fit_logistic(x: torch.Tensor, y: torch.Tensor, l2: float = 1e-3) -> tuple[torch.Tensor, torch.Tensor,
                                                                               torch.Tensor, torch.Tensor]:
    """Standardised logistic regression by L-BFGS -> (mean, std, weights, bias)."""
    mean, std = x.mean(0), x.std(0).clamp(min=1e-6)
    z = (x - mean) / std
    w = torch.zeros(x.shape[1], dtype=torch.float64, requires_grad=True)
    b = torch.zeros((), dtype=torch.float64, requires_grad=True)
    opt = torch.optim.LBFGS([w, b], max_iter=200, line_search_fn="strong_wolfe")

    def closure():
        opt.zero_grad()
        loss = torch.nn.functional.binary_cross_entropy_with_logits(z @ w + b, y) + l2 * (w * w).sum()
        loss.backward()
        return loss
    opt.step(closure)
    return mean, std, w.detach(), b.detach()


def curve(windows: list[dict], score, thresholds) -> list[dict]:
    """Teacher-forced tau and error per threshold: a window keeps micro tokens while score >= threshold."""
    out = []
    for c in thresholds:
        kept = wrong = 0
        for win in windows:
            for tok in win["tokens"]:
                if score(tok) < c:
                    break
                kept += 1
                wrong += not tok["right"]
        n = len(windows)
        out.append({"threshold": c, "tau": 1 + kept / n, "error": wrong / (n + kept)})
    return out


def at_error(points: list[dict], budget: float) -> float:
    """The largest tau on a curve whose error is at most ``budget``."""
    return max([p["tau"] for p in points if p["error"] <= budget] + [1.0])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--model", required=True)
    parser.add_argument("--data", required=True)
    parser.add_argument("--layout", default=None, help="0, 1, 1f, 1f2 (config.parse_layout); default: the model's")
    parser.add_argument("--rows", type=int, default=0)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--out", default=None)
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    model, tokenizer, _ = load_in_layout(args.model, args.layout)
    model.eval()
    vocab = model.base.get_input_embeddings().num_embeddings
    rows, _ = load_rows(args.data, tokenizer, model.config.max_steps, vocab)
    rows = rows[:args.rows] if args.rows else rows
    windows = window_signals(model, rows)
    tokens = [t for w in windows for t in w["tokens"]]
    labels = [t["right"] for t in tokens]
    # 2-fold cross-validation over rows: each half is scored by the gate fit on the other half
    halves = [[w for w in windows if w["row"] % 2 == k] for k in (0, 1)]
    learned_scores, fits = {}, []
    for k in (0, 1):
        train = [t for w in halves[1 - k] for t in w["tokens"]]
        x = torch.tensor([features(t) for t in train], dtype=torch.float64)
        y = torch.tensor([float(t["right"]) for t in train], dtype=torch.float64)
        mean, std, w, b = fit_logistic(x, y)
        fits.append({"weights": dict(zip(FEATURES, w.tolist())), "bias": b.item()})
        for win in halves[k]:
            for t in win["tokens"]:
                z = (torch.tensor(features(t), dtype=torch.float64) - mean) / std
                learned_scores[id(t)] = torch.sigmoid(z @ w + b).item()
    gates = {"token_prob": lambda t: math.exp(t["logp_top"]), "learned": lambda t: learned_scores[id(t)]}
    thresholds = [i / 100 for i in range(30, 100)] + [0.995, 0.999]
    result = {"model": args.model, "data": Path(args.data).name, "layout": args.layout, "rows": len(rows),
              "windows": len(windows), "micro_tokens": len(tokens), "right": sum(labels) / len(labels),
              "features": FEATURES, "fits": fits, "gates": {}}
    for name, score in gates.items():
        points = curve(windows, score, thresholds)
        result["gates"][name] = {"auroc": auroc([score(t) for t in tokens], labels), "curve": points,
                                 "tau_at_error": {str(e): at_error(points, e) for e in (0.005, 0.01, 0.02, 0.03, 0.05)}}
        print(f"{name:10s} AUROC {result['gates'][name]['auroc']:.3f} | tau at error <= "
              + ", ".join(f"{e}: {v:.3f}" for e, v in result["gates"][name]["tau_at_error"].items()))
    # oracle: keep micro tokens while right (the MSD's own ceiling at zero error)
    result["oracle_tau"] = 1 + sum(next((i for i, t in enumerate(w["tokens"]) if not t["right"]), len(w["tokens"]))
                                   for w in windows) / len(windows)
    print(f"oracle tau {result['oracle_tau']:.3f}; {len(tokens)} micro tokens in {len(windows)} windows, "
          f"{result['right']:.1%} right")
    result["machine"] = machine_info(args.threads, "fp32")
    if args.out:
        Path(args.out).write_text(json.dumps(result, indent=2) + "\n")


if __name__ == "__main__":
    main()
