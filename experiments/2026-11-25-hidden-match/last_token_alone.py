"""A probe with no training: what if a group's last token were fed alone, after its other tokens merged?

Every group of k >= 2 tokens is fed as two slots, the merge of its first k - 1 tokens and then its last token alone
(k = 2: two single tokens), so the next group's first token is predicted from a one-token slot that reads merged
history instead of from the merged slot itself. Teacher-forced on the CPU line's val rows with the same weights
(trained on the usual layout): the split's `single` key after the re-cut against `merged` before it, with the base's
view of the choices (`skip_path_split.split_accuracy`), and the slots each layout keeps per response token.

    python experiments/2026-11-25-hidden-match/last_token_alone.py MODEL OUT.json [--rows 60]
"""

import dataclasses
import json
import sys
from pathlib import Path

import torch

from hamburger.bench.machine import machine_info

sys.path.insert(0, str(Path(__file__).resolve().parent))
from probe import model_and_rows  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))
from skip_path_split import split_accuracy  # noqa: E402

args, model, rows = model_and_rows(__doc__, 60)


def last_alone(groups: list[int]) -> list[int]:
    return [part for n in groups for part in ([n - 1, 1] if n >= 2 else [n])]


recut = [dataclasses.replace(r, groups=last_alone(r.groups)) for r in rows]
tokens = sum(len(r.response_ids) for r in rows)
result = {"model": args.model, "rows": len(rows), "response_tokens": tokens,
          "slots_per_token": {"usual": sum(len(r.groups) for r in rows) / tokens,
                              "last_alone": sum(len(r.groups) for r in recut) / tokens},
          "usual": split_accuracy(model, rows), "last_alone": split_accuracy(model, recut),
          "machine": machine_info(1, "fp32"), "command": " ".join(sys.argv)}
Path(args.out).write_text(json.dumps(result, indent=1) + "\n")
for layout in ("usual", "last_alone"):
    print(layout, {k: (v["tokens"], round(100 * v["accuracy"], 1), round(v["base_nll"], 2), round(100 * v["implausible"], 1))
                   for k, v in result[layout].items() if not k.startswith("micro")})
print(result["slots_per_token"])
