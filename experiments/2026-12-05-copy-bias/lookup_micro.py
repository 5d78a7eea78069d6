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

import sys
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(Path(__file__).resolve().parent))
from benchmarks.skip_path_split import teacher_forced  # noqa: E402
from copy_bias import arguments, bootstrap, model_and_rows, write_result  # noqa: E402

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
    """Per micro key, per answer: (has proposal, proposal right, MSD right, MSD top probability, agree, MSD
    probability of the proposal) per token."""
    per_key: dict[str, list[list[tuple]]] = defaultdict(lambda: [[] for _ in rows])
    for start, part, _, out in teacher_forced(model, rows, batch_size):
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


def summarise(per_answer: list[list[tuple]]) -> dict:
    def stats(sample):
        flat = [x for a in sample for x in a]
        with_p = [x for x in flat if x[0]]
        n = max(len(with_p), 1)
        return [len(with_p) / len(flat), sum(x[1] for x in with_p) / n, sum(x[2] for x in with_p) / n,
                sum(x[1] - x[2] for x in with_p) / n]

    flat = [x for a in per_answer for x in a if x[0]]
    agree = [x[3] for x in flat if x[4]]
    disagree = [x[3] for x in flat if not x[4]]
    return {"positions": sum(map(len, per_answer)), "with_proposal": len(flat),
            "msd_top_p_when_agree": sum(agree) / max(len(agree), 1),
            "msd_top_p_when_disagree": sum(disagree) / max(len(disagree), 1),
            "disagree": len(disagree), "by_msd_p_of_proposal": by_bucket(flat),
            **bootstrap(per_answer, stats, ("coverage", "lookup_right", "msd_right", "lookup_minus_msd"))}


def main() -> None:
    args = arguments(__doc__)
    model, rows = model_and_rows(args)
    result = write_result(args, rows, {k: summarise(v) for k, v in sorted(measure(model, rows).items())})
    for key, s in result["keys"].items():
        print(f"{key}: coverage {s['coverage'][0]:.3f}  lookup right {s['lookup_right'][0]:.3f}  MSD right "
              f"{s['msd_right'][0]:.3f}  difference {s['lookup_minus_msd'][0]:+.3f} [{s['lookup_minus_msd'][1]:+.3f}, "
              f"{s['lookup_minus_msd'][2]:+.3f}]  MSD top p agree/disagree {s['msd_top_p_when_agree']:.2f}/"
              f"{s['msd_top_p_when_disagree']:.2f}")


if __name__ == "__main__":
    main()
