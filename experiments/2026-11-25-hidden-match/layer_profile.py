"""Where merged history shows in the base's states: for a model (a run's checkpoint or an export), the mean over the
eval rows' `reading_pairs` (one-token slots with a merged slot earlier in their row) of 1 - cos(model state, unmerged
base state) at each base layer, and the hidden term (their mean over layers) with the eval metrics.

    python experiments/2026-11-25-hidden-match/layer_profile.py MODEL OUT.json [--rows 60]
"""

import argparse
import json
import sys
import time

import torch
import torch.nn.functional as F
import yaml

from hamburger.bench.machine import machine_info
from hamburger.core.model import reading_pairs
from hamburger.core.packing import as_packed
from hamburger.train.batching import collate
from hamburger.train.config import TrainConfig
from hamburger.train.trainer import Trainer

parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
parser.add_argument("model", help="checkpoint folder (a run's last/, or an export) to load as init")
parser.add_argument("out", help="JSON file to write")
parser.add_argument("--rows", type=int, default=60, help="eval rows (the CPU line's eval file, first N)")
parser.add_argument("--config", default="configs/smollm2-lora-merged-v2-cpu.yaml", help="the line's train config")
args = parser.parse_args()

settings = yaml.safe_load(open(args.config))
settings.update(init=args.model, out=f"/tmp/layer-profile-{time.time_ns()}", hidden_weight=1.0,
                eval_max_rows=args.rows)
trainer = Trainer(TrainConfig.from_dict(settings))
model, k = trainer.model, trainer.model.config.max_steps
sums, pairs = None, 0
model.eval()
with torch.no_grad(), trainer._autocast():
    for i in range(0, len(trainer.eval_rows), 8):
        rows = trainer.eval_rows[i:i + 8]
        packed = as_packed(collate(rows, k), k, model.device)
        teacher = trainer.objective.teacher(packed)
        with model._recording(True) as rec:
            model.training_forward(packed)
        group_at, token_at = reading_pairs(packed.batch.groups)
        if not group_at:
            continue
        mine = rec["states"][packed.before_group][torch.tensor(group_at)].float()
        base = teacher.layers[torch.tensor(token_at)].float()
        d = (1 - F.cosine_similarity(mine, base, dim=-1)).sum(0).double()
        sums = d if sums is None else sums + d
        pairs += len(group_at)
per_layer = (sums / pairs).tolist()
metrics = trainer.evaluate()
result = {"model": args.model, "rows": len(trainer.eval_rows), "pairs": pairs,
          "one_minus_cos_by_layer": [round(x, 5) for x in per_layer], "hidden": sum(per_layer) / len(per_layer),
          "eval": metrics, "machine": machine_info(torch.get_num_threads(), settings["dtype"]), "command": " ".join(sys.argv)}
json.dump(result, open(args.out, "w"), indent=1)
print(json.dumps({k: result[k] for k in ("pairs", "hidden", "one_minus_cos_by_layer")}))
