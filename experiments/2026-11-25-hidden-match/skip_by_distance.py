"""Where the skip path fails after merges: teacher-forced accuracy of each group's first token (the base's own
prediction) by how many slots back the row's latest merged slot is (1 = the slot it is predicted from is merged;
"none" = no merge yet), and how often the model is right where the unmerged base is confident (its top probability
at that token >= 0.9) against where it is not. For the tokens with merged history, also how plausible the model's
choice is to the unmerged base: its mean NLL under the base beside the base's own greedy token's, and the share of
choices the base gives less than 1% (NLL > 4.6: the spikes of the decode curves).

    python experiments/2026-11-25-hidden-match/skip_by_distance.py MODEL OUT.json [--rows 30]
"""

import json
import sys
from collections import Counter
from pathlib import Path

import torch

from hamburger.bench.machine import machine_info
from hamburger.core.lora import adapters_disabled
from hamburger.core.packing import as_packed
from hamburger.train.batching import to_batch

sys.path.insert(0, str(Path(__file__).resolve().parent))
from probe import model_and_rows  # noqa: E402

args, model, rows = model_and_rows(__doc__, 30)


def bucket(d: int | None) -> str:
    return "none" if d is None else str(d) if d <= 4 else "5-8" if d <= 8 else "9+"


right, count = Counter(), Counter()
nll_choice, nll_greedy, implausible, merged_tokens = 0.0, 0.0, 0, 0
for start in range(0, len(rows), 8):
    part = rows[start:start + 8]
    packed = as_packed(to_batch(part), model.config.max_steps, model.device)
    with torch.no_grad():
        out = model.training_forward(packed)
        with adapters_disabled(model.base):
            base_logp = model.teacher_states(packed).logits().log_softmax(-1)
        confident = base_logp.amax(-1) >= torch.log(torch.tensor(0.9))
        choice_nll = -base_logp.gather(1, out.predictions[:, None])[:, 0]
        greedy_nll = -base_logp.gather(1, out.targets[:, None])[:, 0]
    ok, first = (out.predictions == out.targets).tolist(), (out.micro_index == 0).tolist()
    keys = []
    for r in part:
        last_merge = None  # slot index (in groups) of the row's latest merged slot before the current group
        for j, n in enumerate(r.groups):
            dist = None if last_merge is None else j - last_merge
            keys.append(bucket(dist))
            keys += [None] * (n - 1)
            if n > 1:  # group j, merged, is the slot group j + 1 is predicted from: distance 1 there
                last_merge = j
    for good, is_first, key, conf, c, g in zip(ok, first, keys, confident.tolist(), choice_nll.tolist(),
                                               greedy_nll.tolist()):
        if is_first and key != "none":
            nll_choice, nll_greedy, merged_tokens = nll_choice + c, nll_greedy + g, merged_tokens + 1
            implausible += c > 4.6
        if is_first:
            history = "merged_history" if key != "none" else "no_merge"
            for k in (f"since_merge_{key}", f"{'confident' if conf else 'unsure'}_{history}"):
                right[k] += good
                count[k] += 1
result = {"model": args.model, "rows": len(rows), "split": {k: {"tokens": count[k], "accuracy": right[k] / count[k]}
                                                             for k in sorted(count)},
          "merged_history": {"tokens": merged_tokens, "mean_base_nll_of_choice": nll_choice / merged_tokens,
                             "mean_base_nll_of_greedy": nll_greedy / merged_tokens,
                             "choices_base_gives_under_1pct": implausible / merged_tokens},
          "machine": machine_info(1, "fp32"), "command": " ".join(sys.argv)}
Path(args.out).write_text(json.dumps(result, indent=1) + "\n")
print({k: (v["tokens"], round(100 * v["accuracy"], 1)) for k, v in result["split"].items()})
print(result["merged_history"])
