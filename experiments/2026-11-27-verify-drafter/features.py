"""What a verify-mode drafter reads, for every answer token of the base's own answers: the MSD's inputs (the base's tap
features and final state) at the position that predicted the token, the token, and the base's greedy choice there.

Verify mode runs the MSD after each step's pending token t_i: it reads the features at the position that predicted t_i,
then e(t_i), e(t_{i+1}), ... and must predict the base's next greedy choices. Those inputs are those of the unchanged
base over unmerged text (no adapter acts), so they can be computed once and a drafter trained on them alone.

    python features.py train OUT.pt [FIRST LAST]   # rows FIRST..LAST-1 of the distilled train split (base answers)
    python features.py dev OUT.pt                  # the dev answers of ../2026-11-27-draft-pricing (chat and math)

OUT holds: feats [N, m, d] bf16 (position predicting answer token i), tokens [N] (answer token i), targets [N] (the
base's greedy choice at that position), rows [R + 1] (offsets of each answer), row ids.
"""

import gzip
import json
import sys
import time
from pathlib import Path

import torch

import hamburger  # noqa: F401  (its MKL setting, before torch's first product)
from hamburger.core.loading import load_model
from hamburger.core.masks import slot_mask
from hamburger.engine import verify
from hamburger.engine.prompt import encode_prompt

HERE = Path(__file__).parent
TRAIN = Path("data/distilled/smollm2-135m-instruct.train.jsonl.gz")
DEV = HERE.parent / "2026-11-27-draft-pricing" / "answers_dev8-64.jsonl"
BATCH_TOKENS = 2048


def rows_of(which: str, tokenizer, first: int, last: int) -> list[tuple[str, list[int], list[int]]]:
    if which == "dev":
        return [(r["id"], r["prompt_ids"], r["answer_ids"]) for r in map(json.loads, DEV.open())]
    out = []
    with gzip.open(TRAIN, "rt") as f:
        for i, line in enumerate(f):
            if i < first:
                continue
            if i >= last:
                break
            r = json.loads(line)
            out.append((r["id"], encode_prompt(tokenizer, r["prompt"]), list(r["response_token_ids"])))
    return out


@torch.inference_mode()
def main() -> None:
    which, out = sys.argv[1], sys.argv[2]
    first, last = (int(sys.argv[3]), int(sys.argv[4])) if len(sys.argv) > 4 else (0, 1 << 30)
    torch.set_num_threads(2)
    model, tokenizer, _, reference = load_model(None, reference=True)
    model = verify.on_base(model, reference).eval()
    rows = [r for r in rows_of(which, tokenizer, first, last) if len(r[2]) >= 2]
    order = sorted(range(len(rows)), key=lambda i: len(rows[i][1]) + len(rows[i][2]))
    feats, tokens, targets = [None] * len(rows), [None] * len(rows), [None] * len(rows)
    done, clock, i = 0, time.time(), 0
    while i < len(order):
        width = len(rows[order[i]][1]) + len(rows[order[i]][2])
        batch = order[i:i + max(1, BATCH_TOKENS // width)]
        width = max(len(rows[j][1]) + len(rows[j][2]) for j in batch)
        ids_t = torch.zeros(len(batch), width, dtype=torch.long)
        valid = torch.zeros(len(batch), width, dtype=torch.bool)
        for b, j in enumerate(batch):
            seq = rows[j][1] + rows[j][2]
            ids_t[b, :len(seq)] = torch.tensor(seq)
            valid[b, :len(seq)] = True
        positions = torch.arange(width)[None].expand(len(batch), -1)
        final, features = model.base_forward(model.embed(ids_t), positions, slot_mask(valid))
        for b, j in enumerate(batch):
            p, a = len(rows[j][1]), len(rows[j][2])
            at = slice(p - 1, p + a - 1)  # the positions that predicted answer tokens 0..a-1
            feats[j] = features[b, at].to(torch.bfloat16)
            targets[j] = model.lm_head(final[b, at]).argmax(-1)
            tokens[j] = torch.tensor(rows[j][2])
            done += a
        i += len(batch)
        print(f"{i}/{len(rows)} rows, {done} tokens, {done / (time.time() - clock):.0f} tok/s", file=sys.stderr,
              flush=True)
    lengths = [len(t) for t in tokens]
    offsets = torch.tensor([0] + lengths).cumsum(0)
    torch.save({"feats": torch.cat(feats), "tokens": torch.cat(tokens), "targets": torch.cat(targets),
                "rows": offsets, "ids": [r[0] for r in rows]}, out)
    agree = (torch.cat(tokens) == torch.cat(targets)).float().mean().item()
    print(f"{out}: {len(rows)} rows, {int(offsets[-1])} tokens; answer token == base argmax {agree:.4f}",
          file=sys.stderr)


if __name__ == "__main__":
    main()
