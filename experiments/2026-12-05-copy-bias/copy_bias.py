"""Does reading merged history make the base copy its own earlier text more than it would (README.md)?

Teacher-forced on held-out answers of the base, read in a layout: at every response token, the *copy set* is the
tokens that followed an earlier occurrence of the last three response tokens in the same answer (the token that
would repeat a 4-gram, what rep4 counts). Per key of `benchmarks/skip_path_split.py` (what the slot a group's first
token is predicted from holds: prompt, merged, tail, single; micro_2..4 for the micro-step decoder's tokens), over
the positions whose copy set is not empty:
  * copy mass: the model's probability of the copy set minus the unmerged, unadapted base's at the same place;
  * flips: how often the model's top token is in the copy set where the base's is not ("to copy"), and the reverse
    ("from copy").
Intervals: bootstrap over answers (95%, 2,000 draws, seed 0).

    python copy_bias.py --model CKPT --data VAL.jsonl --layout 1f2 --out RESULT.json
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
from benchmarks.skip_path_split import base_teacher, load_in_layout, skip_keys, teacher_forced  # noqa: E402
from hamburger.bench.machine import machine_info  # noqa: E402
from hamburger.train.batching import load_rows  # noqa: E402

CONTEXT = 3  # tokens before the one that would complete a repeated 4-gram


def copy_sets(response: list[int]) -> list[set[int]]:
    """For each response position t: the tokens that followed the trigram response[t-3:t] earlier in the answer."""
    seen: dict[tuple[int, ...], set[int]] = defaultdict(set)
    sets = []
    for t in range(len(response)):
        key = tuple(response[t - CONTEXT:t]) if t >= CONTEXT else None
        sets.append(set(seen[key]) if key is not None and key in seen else set())
        if t >= CONTEXT:
            seen[key].add(response[t])
    return sets


def measure(model, rows, batch_size: int = 8) -> dict[str, list[list[float]]]:
    """Per key, per answer: [(copy-mass difference, to-copy flip, from-copy flip), ...] at positions with a copy set."""
    per_key: dict[str, list[list[tuple[float, int, int]]]] = defaultdict(lambda: [[] for _ in rows])
    for start, part, packed, out in teacher_forced(model, rows, batch_size):
        base_p = base_teacher(model, packed).float().softmax(-1)
        model_p = out.token_logits.float().softmax(-1)
        index = out.micro_index.tolist()
        i = 0
        for n, row in enumerate(part):
            sources = iter(skip_keys(row.groups, model.config.single_tail))
            for copy in copy_sets(row.response_ids):
                keys = next(sources)[:1] if index[i] == 0 else [f"micro_{index[i] + 1}"]  # (one source per group)
                if copy:
                    ids = torch.tensor(sorted(copy))
                    mass = float(model_p[i, ids].sum() - base_p[i, ids].sum())
                    model_copies = int(model_p[i].argmax()) in copy
                    base_copies = int(base_p[i].argmax()) in copy
                    for key in keys:
                        per_key[key][start + n].append((mass, int(model_copies and not base_copies),
                                                        int(base_copies and not model_copies)))
                i += 1
        assert i == len(index)
    return per_key


def bootstrap(per_answer: list[list[tuple]], stats, names: tuple[str, ...], draws: int = 2000) -> dict:
    """``stats`` (a list of answers' position tuples -> one value per name) on the answers that have positions, with
    bootstrap intervals over answers (95%, seed 0): {name: [point, low, high]}."""
    answers = [a for a in per_answer if a]
    point = stats(answers)
    rng = random.Random(0)
    boots = [stats([rng.choice(answers) for _ in answers]) for _ in range(draws)]
    result = {}
    for k, name in enumerate(names):
        col = sorted(b[k] for b in boots)
        result[name] = [point[k], col[int(0.025 * draws)], col[int(0.975 * draws) - 1]]
    return result


def summarise(per_answer: list[list[tuple[float, int, int]]]) -> dict:
    """Means over positions, with bootstrap intervals over answers."""
    def means(sample):
        flat = [x for a in sample for x in a]
        return [sum(x[k] for x in flat) / len(flat) for k in range(3)]

    answers = [a for a in per_answer if a]
    return {"positions": sum(map(len, answers)), "answers": len(answers),
            **bootstrap(per_answer, means, ("copy_mass_diff", "to_copy", "from_copy"))}


def arguments(doc: str) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=doc, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--model", required=True, help="HAMburger checkpoint folder")
    parser.add_argument("--data", required=True, help="segmented jsonl (held-out rows of the base's answers)")
    parser.add_argument("--layout", default=None, help="read in this layout (0, 1, 1f, 1f2) instead of the model's")
    parser.add_argument("--rows", type=int, default=0, help="the first N rows only (0: all)")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--out", required=True, help="result JSON")
    return parser.parse_args()


def model_and_rows(args: argparse.Namespace):
    """The checkpoint in the layout asked for (whole [T, V] logits) and the first ``--rows`` rows."""
    torch.set_num_threads(args.threads)
    model, tokenizer, _ = load_in_layout(args.model, args.layout)
    model.loss_chunk = 0
    rows, _ = load_rows(args.data, tokenizer, model.config.max_steps, model.base.get_input_embeddings().num_embeddings)
    return model, rows[:args.rows] if args.rows else rows


def write_result(args: argparse.Namespace, rows, keys: dict) -> dict:
    """The result file: what was read, each key's summary, the machine."""
    result = {"model": Path(args.model).name, "data": Path(args.data).name, "layout": args.layout, "rows": len(rows),
              "response_tokens": sum(len(r.response_ids) for r in rows), "keys": keys,
              "machine": machine_info(args.threads, "fp32")}
    Path(args.out).write_text(json.dumps(result, indent=2) + "\n")
    return result


def main() -> None:
    args = arguments(__doc__)
    model, rows = model_and_rows(args)
    result = write_result(args, rows, {k: summarise(v) for k, v in sorted(measure(model, rows).items())})
    for key, s in result["keys"].items():
        print(f"{key:10s} positions {s['positions']:5d}  copy mass {s['copy_mass_diff'][0]:+.4f} "
              f"[{s['copy_mass_diff'][1]:+.4f}, {s['copy_mass_diff'][2]:+.4f}]  to copy {s['to_copy'][0]:.4f}  "
              f"from copy {s['from_copy'][0]:.4f}")


if __name__ == "__main__":
    main()
