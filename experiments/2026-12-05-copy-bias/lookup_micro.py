"""Would a copy from the answer's own text beat the micro-step decoder where a copy is possible (README.md)?

Teacher-forced on the base's greedy answers (each token is the base's own top choice there), read in a layout: at
every micro token (2..k of a group), the *lookup* proposal is the token that followed the latest earlier occurrence
of the last three response tokens in the answer (prompt lookup restricted to the answer, as `copy_bias.py`'s copy
set). Per micro index: the share of micro positions that have a proposal, and there how often the proposal and the
MSD's top token are the base's token, with the MSD's own probability of its top token split by whether the
proposal agrees with it, and the proposal's accuracy where the MSD gives it at least q (`by_msd_p_of_proposal`). Intervals: bootstrap over answers (95%, 2,000 draws, seed 0).

    python lookup_micro.py --model CKPT --data VAL.jsonl --layout 1f2 --out RESULT.json
"""

from __future__ import annotations

import argparse
import json
import random
import sys
from collections import defaultdict
from pathlib import Path

import torch

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
from benchmarks.skip_path_split import load_in_layout  # noqa: E402
from hamburger.bench.machine import machine_info  # noqa: E402
from hamburger.core.packing import as_packed  # noqa: E402
from hamburger.train.batching import load_rows, to_batch  # noqa: E402

CONTEXT = 3


def proposals(response: list[int]) -> list[int | None]:
    """For each response position t: the token after the latest earlier occurrence of response[t-3:t], else None."""
    latest: dict[tuple[int, ...], int] = {}
    out = []
    for t in range(len(response)):
        key = tuple(response[t - CONTEXT:t]) if t >= CONTEXT else None
        out.append(latest.get(key) if key is not None else None)
        if key is not None:
            latest[key] = response[t]
    return out


def measure(model, rows, batch_size: int = 8) -> dict[str, list[list[tuple]]]:
    """Per micro key, per answer: (has proposal, proposal right, MSD right, MSD top probability, agree) per token."""
    per_key: dict[str, list[list[tuple]]] = defaultdict(lambda: [[] for _ in rows])
    for start in range(0, len(rows), batch_size):
        part = rows[start:start + batch_size]
        packed = as_packed(to_batch(part), model.config.max_steps, model.device, model.config.single_tail,
                           model.config.fold_tail)
        with torch.no_grad():
            out = model.training_forward(packed)
        probs = out.token_logits.float().softmax(-1)
        top_p = probs.amax(-1).tolist()
        predictions, targets, index = out.predictions.tolist(), out.targets.tolist(), out.micro_index.tolist()
        i = 0
        for n, row in enumerate(part):
            for proposal in proposals(row.response_ids):
                if index[i] > 0:
                    q = float(probs[i, proposal]) if proposal is not None else 0.0
                    per_key[f"micro_{index[i] + 1}"][start + n].append(
                        (proposal is not None, proposal == targets[i], predictions[i] == targets[i], top_p[i],
                         proposal == predictions[i], q))
                i += 1
        assert i == len(index)
    return per_key


BUCKETS = (0.0, 0.01, 0.05, 0.1, 0.2, 0.3, 0.5, 0.7, 0.9)


def by_bucket(flat: list[tuple]) -> list[dict]:
    """Positions with a proposal, by the MSD's probability q of the proposal (at least each bucket's lower end):
    how many, and how often the proposal is the base's token (a gate "take the proposal if q >= x")."""
    out = []
    for low in BUCKETS:
        kept = [x for x in flat if x[5] >= low]
        out.append({"q_at_least": low, "positions": len(kept),
                    "lookup_right": sum(x[1] for x in kept) / max(len(kept), 1),
                    "msd_top_p_at_least_0.9_too": sum(x[3] >= 0.9 for x in kept)})
    return out


def summarise(per_answer: list[list[tuple]], draws: int = 2000) -> dict:
    answers = [a for a in per_answer if a]

    def stats(sample):
        flat = [x for a in sample for x in a]
        with_p = [x for x in flat if x[0]]
        n = max(len(with_p), 1)
        return [len(with_p) / len(flat), sum(x[1] for x in with_p) / n, sum(x[2] for x in with_p) / n,
                sum(x[1] - x[2] for x in with_p) / n]

    point = stats(answers)
    rng = random.Random(0)
    boots = [stats([rng.choice(answers) for _ in answers]) for _ in range(draws)]
    flat = [x for a in answers for x in a if x[0]]
    agree = [x[3] for x in flat if x[4]]
    disagree = [x[3] for x in flat if not x[4]]
    result = {"positions": sum(map(len, answers)), "with_proposal": len(flat),
              "msd_top_p_when_agree": sum(agree) / max(len(agree), 1),
              "msd_top_p_when_disagree": sum(disagree) / max(len(disagree), 1),
              "disagree": len(disagree), "by_msd_p_of_proposal": by_bucket(flat)}
    for k, name in enumerate(("coverage", "lookup_right", "msd_right", "lookup_minus_msd")):
        col = sorted(b[k] for b in boots)
        result[name] = [point[k], col[int(0.025 * draws)], col[int(0.975 * draws) - 1]]
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--model", required=True, help="HAMburger checkpoint folder")
    parser.add_argument("--data", required=True, help="segmented jsonl (held-out rows of the base's greedy answers)")
    parser.add_argument("--layout", default=None, help="read in this layout (0, 1, 1f, 1f2) instead of the model's")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--out", required=True, help="result JSON")
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    model, tokenizer, _ = load_in_layout(args.model, args.layout)
    model.loss_chunk = 0  # the whole [T, V] logits
    rows, _ = load_rows(args.data, tokenizer, model.config.max_steps, model.base.get_input_embeddings().num_embeddings)
    per_key = measure(model, rows)
    result = {"model": Path(args.model).name, "data": Path(args.data).name, "layout": args.layout, "rows": len(rows),
              "keys": {k: summarise(v) for k, v in sorted(per_key.items())},
              "machine": machine_info(args.threads, "fp32")}
    Path(args.out).write_text(json.dumps(result, indent=2) + "\n")
    for key, s in result["keys"].items():
        print(f"{key}: coverage {s['coverage'][0]:.3f}  lookup right {s['lookup_right'][0]:.3f}  MSD right "
              f"{s['msd_right'][0]:.3f}  difference {s['lookup_minus_msd'][0]:+.3f} [{s['lookup_minus_msd'][1]:+.3f}, "
              f"{s['lookup_minus_msd'][2]:+.3f}]  MSD top p agree/disagree {s['msd_top_p_when_agree']:.2f}/"
              f"{s['msd_top_p_when_disagree']:.2f}")


if __name__ == "__main__":
    main()
