"""A probe with no training: proportional attention (Token Merging's fix for merged keys) on a trained model.

Every query's attention logit to a key slot that merges ``size`` tokens gets ``alpha * log(size)`` added, so that at
alpha 1 one merged key weighs as much as its tokens would in the softmax. Teacher-forced skip split
(`benchmarks/skip_path_split.py`'s `split_accuracy`) on the first ROWS rows of the CPU line's val file, per alpha; the
mask is the training forward's own, made additive.

    python experiments/2026-11-25-hidden-match/proportional_attention.py MODEL OUT.json --alphas 0 0.3 1 -0.3 --rows 30
"""

import argparse
import json
import sys
from pathlib import Path

import torch

import hamburger.core.model as model_module
from hamburger.bench.machine import machine_info
from hamburger.core.checkpoint import load_checkpoint
from hamburger.core.packing import as_packed
from hamburger.train.batching import load_rows

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))
from skip_path_split import split_accuracy  # noqa: E402

parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
parser.add_argument("model", help="HAMburger checkpoint folder")
parser.add_argument("out", help="JSON file to write")
parser.add_argument("--alphas", type=float, nargs="+", default=[0.0, 0.3, 1.0, -0.3])
parser.add_argument("--rows", type=int, default=30, help="first N rows of the val file")
parser.add_argument("--data", default="runs/cpu/sliding09-split/val.jsonl")
args = parser.parse_args()
torch.set_num_threads(1)
model, tokenizer, _ = load_checkpoint(args.model)
rows, _ = load_rows(args.data, tokenizer, model.config.max_steps, model.base.get_input_embeddings().num_embeddings)
rows = rows[:args.rows]

bias_of_batch = {}
plain_mask, plain_forward = model_module.slot_mask, model_module.HamburgerModel.training_forward


def additive_mask(valid, *a, **k):  # the boolean mask as 0 / -inf, plus the batch's per-key bias
    allowed = plain_mask(valid, *a, **k)
    bias = bias_of_batch["bias"][:, None, None, :allowed.shape[-1]]
    return torch.where(allowed, bias, torch.tensor(float("-inf")))


def forward_with_bias(self, batch, teacher=None, prompt=None, windows=False):
    packed = as_packed(batch, self.config.max_steps, self.device)
    bias = torch.zeros(packed.valid.shape)
    if packed.merged_group.numel():
        sizes = packed.group_sizes[packed.merged_group].float()
        bias = bias.index_put(packed.merged_at, bias_of_batch["alpha"] * torch.log(sizes))
    bias_of_batch["bias"] = bias
    return plain_forward(self, packed, teacher, prompt, windows)


model_module.slot_mask = additive_mask
model_module.HamburgerModel.training_forward = forward_with_bias
result = {"model": args.model, "data": Path(args.data).name, "rows": len(rows), "by_alpha": {},
          "machine": machine_info(1, "fp32"), "command": " ".join(sys.argv)}
for alpha in args.alphas:
    bias_of_batch["alpha"] = alpha
    split = split_accuracy(model, rows)
    result["by_alpha"][str(alpha)] = split
    print(alpha, {k: round(100 * v["accuracy"], 2) for k, v in split.items()}, flush=True)
Path(args.out).write_text(json.dumps(result, indent=1) + "\n")
