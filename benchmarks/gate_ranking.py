"""How well each signal tells a right micro token from a wrong one, teacher-forced: the knob's candidate gates.

On held-out segmented rows, every micro token (2..k of a data group) is right when the MSD's argmax is the
answer's token (the base's own greedy answer for distilled data). Signals, all known before the token is kept:
  * stop_head   1 - p_stop after the previous token (gate "stop_head": decided before the token exists);
  * token_prob  the MSD's probability of its argmax (gate "token_prob");
  * product     the two multiplied.
Reports each signal's AUROC (the chance a right token scores above a wrong one) and, per threshold, the share
of micro tokens kept and how many of them are right (precision).

    python benchmarks/gate_ranking.py --model CKPT --data VAL.jsonl --out RESULT.json
"""

from __future__ import annotations

import argparse
import bisect
import json
from pathlib import Path

import torch

from hamburger.bench.machine import machine_info
from hamburger.core.checkpoint import load_checkpoint
from hamburger.train.batching import load_rows, to_batch

SIGNALS = ("stop_head", "token_prob", "product")
THRESHOLDS = (0.5, 0.7, 0.8, 0.9, 0.95)


def micro_signals(model, rows, batch_size: int = 8) -> list[tuple[bool, float, float]]:
    """(right, 1 - p_stop after the previous token, MSD probability of its argmax) of every micro token."""
    out = []
    for start in range(0, len(rows), batch_size):
        with torch.no_grad():
            res = model.training_forward(to_batch(rows[start:start + batch_size]))
        top = res.token_logits.softmax(-1).max(-1).values.tolist()
        right = (res.token_logits.argmax(-1) == res.targets).tolist()
        going = torch.sigmoid(-res.stop_logits).tolist()
        index = res.micro_index.tolist()
        out += [(right[i], going[i - 1], top[i]) for i in range(1, len(index)) if index[i] > 0]
    return out


def auroc(scores: list[float], labels: list[bool]) -> float:
    """P(a right token's score > a wrong one's), ties counting half."""
    wrong = sorted(s for s, ok in zip(scores, labels) if not ok)
    right = [s for s, ok in zip(scores, labels) if ok]
    if not wrong or not right:
        return float("nan")
    total = sum(bisect.bisect_left(wrong, s) + 0.5 * (bisect.bisect_right(wrong, s) - bisect.bisect_left(wrong, s))
                for s in right)
    return total / (len(right) * len(wrong))


def ranking(records: list[tuple[bool, float, float]]) -> dict:
    labels = [r[0] for r in records]
    scores = {"stop_head": [r[1] for r in records], "token_prob": [r[2] for r in records],
              "product": [r[1] * r[2] for r in records]}
    out = {"micro_tokens": len(records), "right": sum(labels) / max(1, len(labels))}
    for name in SIGNALS:
        rows = []
        for c in THRESHOLDS:
            kept = [ok for s, ok in zip(scores[name], labels) if s >= c]
            rows.append({"threshold": c, "kept": len(kept) / max(1, len(labels)),
                         "precision": sum(kept) / len(kept) if kept else None})
        out[name] = {"auroc": auroc(scores[name], labels), "thresholds": rows}
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--model", required=True, help="HAMburger checkpoint folder")
    parser.add_argument("--data", required=True, help="segmented jsonl (held-out rows)")
    parser.add_argument("--rows", type=int, default=0, help="use the first N rows (0: all)")
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--out", default=None, help="write the result JSON here")
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    model, tokenizer, _ = load_checkpoint(args.model)
    vocab = model.base.get_input_embeddings().num_embeddings
    rows, _ = load_rows(args.data, tokenizer, model.config.max_steps, vocab)
    rows = rows[:args.rows] if args.rows else rows
    result = {"model": Path(args.model).name, "data": Path(args.data).name, "rows": len(rows),
              **ranking(micro_signals(model, rows)), "machine": machine_info(args.threads, "fp32")}
    for name in SIGNALS:
        best = ", ".join(f"{r['threshold']}: kept {r['kept']:.3f} right {r['precision'] or 0:.3f}"
                         for r in result[name]["thresholds"])
        print(f"{name:10s} AUROC {result[name]['auroc']:.3f} | {best}")
    if args.out:
        Path(args.out).write_text(json.dumps(result, indent=2) + "\n")


if __name__ == "__main__":
    main()
