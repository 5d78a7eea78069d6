"""A probe with no training: proportional attention (Token Merging's fix for merged keys) on a trained model.

Every query's attention logit to a key slot that merges ``size`` tokens gets ``alpha * log(size)`` added, so that at
alpha 1 one merged key weighs as much as its tokens would in the softmax. Teacher-forced skip split
(`benchmarks/skip_path_split.py`'s `split_accuracy`) on the first ROWS rows of the CPU line's val file, per alpha; the
mask is the training forward's own, made additive.

    python experiments/2026-11-25-hidden-match/proportional_attention.py MODEL OUT.json --alphas 0 0.3 1 -0.3 --rows 30
"""

import json
import sys
from pathlib import Path

import torch

import hamburger.core.model as model_module
from hamburger.bench.machine import machine_info
from hamburger.core.packing import as_packed

sys.path.insert(0, str(Path(__file__).resolve().parent))
from probe import model_and_rows  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))
from skip_path_split import split_accuracy  # noqa: E402

args, model, rows = model_and_rows(
    __doc__, 30, lambda p: p.add_argument("--alphas", type=float, nargs="+", default=[0.0, 0.3, 1.0, -0.3]))

bias_of_batch = {}
plain_mask, plain_forward = model_module.slot_mask, model_module.HamburgerModel.training_forward


def additive_mask(valid, *a, **k):  # the boolean mask as 0 / -inf, plus the batch's per-key bias
    allowed = plain_mask(valid, *a, **k)
    if bias_of_batch.get("bias") is None:  # any forward but the merged one (split_accuracy's unmerged base)
        return allowed
    bias = bias_of_batch["bias"][:, None, None, :allowed.shape[-1]]
    return torch.where(allowed, bias, torch.tensor(float("-inf")))


def forward_with_bias(self, batch, teacher=None, prompt=None, windows=False):
    packed = as_packed(batch, self.config.max_steps, self.device)
    bias = torch.zeros(packed.valid.shape)
    if packed.input_sizes.numel():
        sizes = packed.input_sizes.float()
        bias = bias.index_put(packed.merged_at, bias_of_batch["alpha"] * torch.log(sizes))
    bias_of_batch["bias"] = bias
    try:
        return plain_forward(self, packed, teacher, prompt, windows)
    finally:
        bias_of_batch["bias"] = None


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
