"""A copy prior, teacher-forced (tail.py's figure): the decodes' spikes are mostly failed copies from the folded
history, and at two of three of them prompt lookup (over the host-side token history, which folding does not touch)
drafts the base's own choice (spikes_copy.txt). This scores, for the shipped reader at the default fold, the draw
``(1 - lam) x q + lam x [the lookup's token]`` at every position where the latest match of the text's last 3 (then 2)
tokens lies before the fold's window (max(60, 0.45 x the position) answer tokens back: its continuation is folded),
and ``q`` (T 0.7, top-p 0.9, the fold's reading) elsewhere; beside it the base's own draw, as in tail.py.

    python experiments/2026-11-28-tail-guard/copy_prior.py runs/tail-guard/segmented.jsonl > .../copy_prior.jsonl
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import torch

from hamburger.bench.machine import machine_info

sys.path.insert(0, str(Path(__file__).resolve().parent))
from tail import GUARDS, READERS, draw, draw_stats, reader_trainer, teacher_forced  # noqa: E402

LAMBDAS = (0.0, 0.25, 0.5, 0.75, 1.0)
WINDOW, SHARE, NGRAM, MIN_NGRAM = 60, 0.45, 3, 2  # the default fold's window; engine/lookup.py's defaults


def latest_match(history: list[int]) -> int | None:
    """Where the token that followed the latest earlier occurrence of ``history``'s last n-gram (n = 3, then 2)
    sits in ``history`` (engine/lookup.py's search), or None."""
    for n in range(min(NGRAM, len(history) - 1), MIN_NGRAM - 1, -1):
        tail = history[-n:]
        for start in range(len(history) - n - 1, -1, -1):
            if history[start:start + n] == tail:
                return start + n
    return None


def main() -> None:
    data = sys.argv[1]
    torch.set_num_threads(2)
    trainer = reader_trainer(data, READERS["af-reader"])
    sums = {lam: torch.zeros(4, dtype=torch.float64) for lam in LAMBDAS}
    base_sums = torch.zeros(4, dtype=torch.float64)
    copies, right, positions = 0, 0, 0
    for batch, logits, teacher in teacher_forced(trainer):
        nll_all = -teacher.log_softmax(-1)
        q_all, index_all = draw(logits, GUARDS["as asked"])
        p_all, p_index = draw(teacher, GUARDS["as asked"])
        offset = 0
        for row in batch:
            history = list(row.prompt_ids)
            for i, token in enumerate(row.response_ids):
                t = offset + i
                q, index = q_all[t], index_all[t]
                base_sums += draw_stats(p_all[t], nll_all[t][p_index[t]]).double()
                source = latest_match(history)
                folded = len(row.prompt_ids) + i - max(WINDOW, int(SHARE * i))
                copy = source is not None and len(row.prompt_ids) <= source < folded
                if copy:
                    copies += 1
                    proposal = history[source]
                    right += int(nll_all[t].argmin()) == proposal
                    at = (index == proposal).nonzero()
                    if len(at) == 0:  # the proposal outside the top tokens: one more entry
                        q, index = torch.cat([q, q.new_zeros(1)]), torch.cat([index, index.new_tensor([proposal])])
                        at = torch.tensor([[len(index) - 1]])
                    spike = torch.zeros_like(q)
                    spike[int(at[0, 0])] = 1.0
                for lam in LAMBDAS:
                    mixed = (1 - lam) * q + lam * spike if copy else q
                    sums[lam] += draw_stats(mixed, nll_all[t][index]).double()
                history.append(token)
                positions += 1
            offset += len(row.response_ids)
    answers = len(trainer.eval_rows)
    print(json.dumps({"machine": machine_info(2, "float32"), "data": data, "answers": answers, "positions": positions,
                      "copy_positions": copies, "lookup_is_base_top": right}))

    def row(label, s):
        return {"draw": label, "spikes_per_answer": round(float(s[0]) / answers, 5),
                "tail_per_answer": round(float(s[1]) / answers, 4),
                "expected_nll_per_token": round(float(s[2]) / positions, 5),
                "entropy_per_token": round(float(s[3]) / positions, 5)}
    print(json.dumps(row("base's own reading, as asked", base_sums)))
    for lam in LAMBDAS:
        print(json.dumps(row(f"fold (shipped reader), copy prior {lam}", sums[lam])))


if __name__ == "__main__":
    main()
