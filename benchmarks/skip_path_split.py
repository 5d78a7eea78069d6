"""Where the skip path fails: teacher-forced accuracy of each group's first token, split by what the base
reads at the slot it predicts from.

The first token of a group is the base's own next-token prediction (no micro-step decoder). It is made at
  * `prompt`  the last prompt token (the response's first group: nothing merged yet),
  * `merged`  a slot that merges the previous group of 2+ tokens,
  * `single`  a slot holding one token, with merged slots earlier in the history,
  * `tail`    (a model with a `single_tail`) the single last token of a group fed as a merged head and its tail.
`merged_2` .. `merged_k` split `merged` by the length of the group the slot merges, `tail_3` .. `tail_k` split `tail`
by the length of the group (`merged_k` and `tail_k` read the same group in the two layouts). `--layout` (0, 1, 1f,
1f2: `config.layout_name`) reads a checkpoint in another layout than its own (what a checkpoint trained without a
tail reads in that layout; a folding tail reads its groups as `tail` too, with the older history folded).
The micro-step decoder's tokens (2..k) are reported beside them. On the base's own greedy answers an
unmerged base is right 100% of the time at `prompt`, so the gaps measure what merging costs.

Accuracy counts a near-tie flipped to the base's second choice like a wrong token. Since the data's groups begin
where the base is unsure, most skip-path tokens are such points, so each key also says how plausible the model's
choices are to the unmerged, unadapted base at the same place: `base_nll`, the mean NLL of the chosen token under it
(its greedy token's is the floor), and `implausible`, the share of choices it gives less than 1% (NLL > 4.6), the
kind of token that makes the decode curves' worst-token spikes. `base_top1` is the share of choices that are the
unmerged base's own top token there: on the base's greedy answers it is the accuracy; on sampled answers (whose
tokens are draws, not the base's choices) it is what decoding greedily from such a history would keep.

    python benchmarks/skip_path_split.py --model CKPT --data VAL.jsonl --out RESULT.json
"""

from __future__ import annotations

import argparse
import json
import math
from collections import Counter
from pathlib import Path

import torch

from hamburger.core.checkpoint import load_checkpoint
from hamburger.core.config import parse_layout
from hamburger.core.lora import adapters_disabled
from hamburger.core.packing import as_packed, input_sizes
from hamburger.bench.machine import machine_info
from hamburger.train.batching import load_rows, to_batch


def skip_sources(groups: list[int], single_tail: int = 0) -> list[str]:
    """For each group of a response: what the slot its first token is predicted from holds (the last input of the
    group before, `input_sizes`)."""
    sources = ["prompt"]
    for n in groups[:-1]:
        inputs = input_sizes(n, single_tail)
        sources.append("merged" if inputs[-1] > 1 else "tail" if max(inputs) > 1 else "single")
    return sources


def skip_keys(groups: list[int], single_tail: int = 0) -> list[list[str]]:
    """For each group: the keys its first token counts under (its source, and for a merged slot or a tail the length
    of the group before)."""
    return [[s, f"{s}_{groups[i - 1]}"] if s in ("merged", "tail") else [s]
            for i, s in enumerate(skip_sources(groups, single_tail))]


def load_in_layout(path: str, layout: str | None = None):
    """`load_checkpoint`, read in ``layout`` (0, 1, 1f, 1f2: `config.parse_layout`; None: the checkpoint's own)."""
    model, tokenizer, info = load_checkpoint(path)
    if layout is not None:
        model.config.single_tail, model.config.fold_tail = parse_layout(layout)
        model.config.validate()
    return model, tokenizer, info


IMPLAUSIBLE_NLL = -math.log(0.01)


def teacher_forced(model, rows, batch_size: int = 8):
    """``rows`` read teacher-forced in the model's layout, a batch at a time, without gradients: (the batch's first
    row index, its rows, the packed batch, the model's `TrainOutput`)."""
    for start in range(0, len(rows), batch_size):
        part = rows[start:start + batch_size]
        packed = as_packed(to_batch(part), model.config.max_steps, model.device, model.config.single_tail,
                           model.config.fold_tail)
        with torch.no_grad():
            out = model.training_forward(packed)
        yield start, part, packed, out


def base_teacher(model, packed) -> torch.Tensor:
    """The unmerged, unadapted base's logits at every response token of ``packed``."""
    with torch.no_grad(), adapters_disabled(model.base):
        return model.teacher_states(packed).logits()


def split_accuracy(model, rows, batch_size: int = 8) -> dict:
    """Per key: tokens, accuracy, and the unmerged base's view of the model's choices (`base_nll`, `implausible`,
    `base_top1`)."""
    correct, count, nll, implausible, top1 = Counter(), Counter(), Counter(), Counter(), Counter()
    for _, part, packed, out in teacher_forced(model, rows, batch_size):
        base_logp = base_teacher(model, packed).log_softmax(-1)
        choice_nll = (-base_logp.gather(1, out.predictions[:, None])[:, 0]).tolist()
        right = (out.predictions == out.targets).tolist()
        base_top = (out.predictions == base_logp.argmax(-1)).tolist()
        index = out.micro_index.tolist()
        sources = iter(keys for r in part for keys in skip_keys(r.groups, model.config.single_tail))
        for ok, j, c, top in zip(right, index, choice_nll, base_top):
            for key in next(sources) if j == 0 else [f"micro_{j + 1}"]:
                correct[key] += ok
                top1[key] += top
                count[key] += 1
                nll[key] += c
                implausible[key] += c > IMPLAUSIBLE_NLL
    return {k: {"tokens": count[k], "accuracy": correct[k] / count[k], "base_nll": nll[k] / count[k],
                "implausible": implausible[k] / count[k], "base_top1": top1[k] / count[k]} for k in sorted(count)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--model", required=True, help="HAMburger checkpoint folder")
    parser.add_argument("--data", required=True, help="segmented jsonl (held-out rows)")
    parser.add_argument("--rows", type=int, default=0, help="use the first N rows (0: all)")
    parser.add_argument("--layout", default=None,
                        help="feed groups in this layout (0, 1, 1f, 1f2: HamburgerConfig.single_tail and fold_tail) "
                             "instead of the checkpoint's")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--out", default=None, help="write the result JSON here")
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    model, tokenizer, info = load_in_layout(args.model, args.layout)
    vocab = model.base.get_input_embeddings().num_embeddings
    rows, _ = load_rows(args.data, tokenizer, model.config.max_steps, vocab)
    rows = rows[:args.rows] if args.rows else rows
    result = {"model": Path(args.model).name, "data": Path(args.data).name, "rows": len(rows),
              "response_tokens": sum(len(r.response_ids) for r in rows),
              "lora_scope": model.config.lora_scope, "single_tail": model.config.single_tail,
              "fold_tail": model.config.fold_tail, "split": split_accuracy(model, rows),
              "machine": machine_info(args.threads, "fp32")}
    print(json.dumps(result["split"], indent=1))
    if args.out:
        Path(args.out).write_text(json.dumps(result, indent=2) + "\n")


if __name__ == "__main__":
    main()
