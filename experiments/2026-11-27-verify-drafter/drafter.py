"""A verify-mode drafter trained on what verify mode feeds it (`features.py`), and the measure that decides: MSD-only
lossless verify replayed over the base's own dev answers.

    python drafter.py eval DEV.pt [CKPT.safetensors]      # MSD-only drafting's tokens per forward (no lookup or table)
    python drafter.py train TRAIN.pt DEV.pt OUT_DIR [--steps N --lr X --draft K --batch B]

The replay is exact for greedy verify: at answer token i (the step's pending token) the MSD reads the features at the
position that predicted it, then e(a_i) and its own drafts; a draft is kept while it equals the base's greedy choice.
Teacher forcing on the base's choices gives the MSD exactly the inputs it has whenever its drafts so far were kept.
The stop head ends a draft where its continue probability is below the confidence (verify's default 0.3); drafts are
capped at ``--draft`` tokens (verify's default: max_steps - 1 = 3).

Training (only the MSD's layers and final norm, and the stop head, learn; the base, its embeddings and LM head stay):
cross-entropy of the draft vocabulary's logits against the base's greedy choices at draft positions 1..K (choices
outside the draft vocabulary are left out: the draft head cannot write them), and the stop head's BCE against "the
draft after this token is wrong" (verify keeps drafting only while the next draft is right), weighted 0.5.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import time
from pathlib import Path

import torch
import torch.nn.functional as F
from safetensors.torch import load_file, save_file

import hamburger  # noqa: F401  (its MKL setting, before torch's first product)
from hamburger.core.loading import load_model
from hamburger.core.modules import Drafter
from hamburger.engine import verify

CONFIDENCE = 0.3  # verify's default
# A cost model of a verify step on the Intel Xeon (../2026-11-27-draft-pricing/forward_cost.jsonl): a base forward of
# one position and its LM head row ~46 ms; each drafted token adds a position (~7 ms) and an MSD step on the draft
# vocabulary (~2 ms: the MSD's layers 1.4 ms, a 4096-row head a twelfth of the full head's 5.3 ms).
STEP_MS, DRAFT_MS = 46.0, 9.0


def load(ckpt: str | None = None):
    model, tokenizer, _, reference = load_model(None, reference=True)
    model = verify.on_base(model, reference).eval()
    if ckpt:  # into the model's own pair (`Drafter.of` shares it)
        Drafter.of(model).load_state_dict(load_file(ckpt))
    for p in model.parameters():
        p.requires_grad_(False)
    return model


class Data:
    """Examples: answer position i with room for ``k`` drafts (targets past the answer's end are masked)."""

    def __init__(self, path: str, k: int, context: int = 0):
        d = torch.load(path)
        self.context = context
        self.feats, self.tokens, self.targets, self.rows = d["feats"], d["tokens"], d["targets"], d["rows"]
        self.k = k
        n = len(self.tokens)
        row_end, row_start = torch.zeros(n, dtype=torch.long), torch.zeros(n, dtype=torch.long)
        for s, e in zip(self.rows[:-1].tolist(), self.rows[1:].tolist()):
            row_end[s:e], row_start[s:e] = e, s
        self.row_end, self.row_start = row_end, row_start

    def batch(self, index: torch.Tensor):
        """-> feats [B, m, d] fp32, inputs [B, k] (a_i then the base's choices), targets [B, k], mask [B, k]."""
        j = index[:, None] + torch.arange(1, self.k + 1)[None]  # positions predicting the drafts' targets
        mask = j < self.row_end[index][:, None]
        j = torch.where(mask, j, index[:, None])
        targets = self.targets[j]
        inputs = torch.cat([self.tokens[index][:, None], targets[:, :-1]], 1)
        feats = self.feats[index].float()
        if self.context:  # the final states of the positions before, oldest first (the answer's first repeats)
            back = index[:, None] - torch.arange(self.context, 0, -1)[None]
            back = torch.maximum(back, self.row_start[index][:, None])
            feats = torch.cat([self.feats[back][:, :, -1].float(), feats], 1)
        return feats, inputs, targets, mask


def draft_outputs(model, vocab_w, feats, inputs):
    """Teacher-forced drafts: (draft-vocabulary logits [B, k, n], continue logits [B, k + 1]: before draft 1 (the base's
    final state and a_i), then after each draft token)."""
    m = feats.shape[1]
    x = torch.cat([feats, model.embed(inputs)], 1)
    h = model.decoder(x)[:, m:]  # h[:, j] predicts draft j + 1
    logits = h @ vocab_w
    drafts_in = model.embed(inputs[:, 1:])  # draft j's token, fed as input j + 1 (teacher-forced)
    stop_first = model.stop_head(feats[:, -1], model.embed(inputs[:, 0]))
    stop_rest = model.stop_head(h[:, :-1], drafts_in)
    return logits, torch.cat([stop_first[:, None], stop_rest], 1)


def local_targets(vocab: torch.Tensor, size: int) -> torch.Tensor:
    """Full-vocabulary id -> index in the draft vocabulary, -1 outside it."""
    table = torch.full((size,), -1, dtype=torch.long)
    table[vocab] = torch.arange(len(vocab))
    return table


@torch.no_grad()
def replay(model, data: Data, vocab, vocab_w, chunk: int = 2048, confidence: float = CONFIDENCE) -> dict:
    """MSD-only lossless verify over each answer -> tokens per forward, and the drafts' teacher-forced accuracy."""
    n, k = len(data.tokens), data.k
    drafts = torch.empty(n, k, dtype=torch.long)
    go_on = torch.empty(n, k, dtype=torch.bool)
    right = torch.zeros(n, k, dtype=torch.bool)
    for s in range(0, n, chunk):
        index = torch.arange(s, min(n, s + chunk))
        feats, inputs, targets, mask = data.batch(index)
        logits, stop = draft_outputs(model, vocab_w, feats, inputs)
        drafts[index] = vocab[logits.argmax(-1)]
        go_on[index] = torch.sigmoid(-stop[:, :k].float()) >= confidence
        right[index] = (drafts[index] == targets) & mask
    forwards, tokens, drafted, kept = 0, 0, 0, 0
    for a, b in zip(data.rows[:-1].tolist(), data.rows[1:].tolist()):
        i = a
        while i < b:
            n_draft = 0
            while n_draft < k and go_on[i, n_draft] and i + 1 + n_draft < b:
                n_draft += 1
            n_kept = 0
            while n_kept < n_draft and right[i, n_kept]:
                n_kept += 1
            forwards += 1
            drafted += n_draft
            kept += n_kept
            i += 1 + n_kept
        tokens += b - a
    prefix = right.cumprod(1).float().mean(0).tolist()
    cost = STEP_MS * forwards + DRAFT_MS * drafted
    return {"tokens_per_forward": tokens / forwards, "modelled_ms_per_token": round(cost / tokens, 3),
            "drafted_per_forward": drafted / forwards,
            "kept_of_drafted": kept / max(1, drafted), "prefix_right": [round(x, 4) for x in prefix],
            "tokens": tokens, "forwards": forwards}


def vocab_head(model):
    vocab = model.draft_vocab
    weight = model.base.get_output_embeddings().weight
    return vocab, weight[vocab].t().contiguous()


def cmd_eval(args) -> None:
    torch.set_num_threads(2)
    model = load(args.ckpt)
    vocab, vocab_w = vocab_head(model)
    out = replay(model, Data(args.data, args.draft, args.context), vocab, vocab_w, confidence=args.confidence)
    print(json.dumps(out))


def cmd_train(args) -> None:
    torch.set_num_threads(args.threads)
    torch.manual_seed(args.seed)
    model = load(args.init)
    vocab, vocab_w = vocab_head(model)
    local = local_targets(vocab, model.base.get_output_embeddings().weight.shape[0])
    train, dev = Data(args.train, args.draft, args.context), Data(args.dev, args.draft, args.context)
    params = list(model.decoder.parameters()) + list(model.stop_head.parameters())
    for p in params:
        p.requires_grad_(True)
    opt = torch.optim.AdamW(params, lr=args.lr, weight_decay=0.0, betas=(0.9, 0.98))
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    log = open(out / "metrics.jsonl", "a")
    n = len(train.tokens)
    start = time.time()
    step = 0
    if (out / "last.safetensors").exists():  # resume
        state = json.loads((out / "last.json").read_text())
        step = state["step"]
        Drafter.of(model).load_state_dict(load_file(out / "last.safetensors"))
        opt_state = out / "opt.pt"
        if opt_state.exists():
            opt.load_state_dict(torch.load(opt_state))
        print(f"resumed at step {step}", file=sys.stderr)
    gen = torch.Generator().manual_seed(args.seed + step)

    def save(tag: str) -> None:
        save_file({k: v.detach().contiguous() for k, v in Drafter.of(model).state_dict().items()},
                  out / f"{tag}.safetensors")
        if tag == "last":
            torch.save(opt.state_dict(), out / "opt.pt")
            (out / "last.json").write_text(json.dumps({"step": step}))

    while step < args.steps:
        lr = args.lr * min(1.0, (step + 1) / args.warmup) * 0.5 * (1 + math.cos(math.pi * step / args.steps))
        for g in opt.param_groups:
            g["lr"] = lr
        index = torch.randint(0, n, (args.batch,), generator=gen)
        feats, inputs, targets, mask = train.batch(index)
        logits, stop = draft_outputs(model, vocab_w, feats, inputs)
        want = local[targets]
        usable = mask & (want >= 0)
        ce = F.cross_entropy(logits[usable].float(), want[usable])
        with torch.no_grad():
            right = (vocab[logits.argmax(-1)] == targets) & usable
        # continue logit j (before draft j + 1): stop unless draft j + 1 is right
        stop_target = (~right).float()
        stop_loss = F.binary_cross_entropy_with_logits(stop[:, :args.draft].float()[mask], stop_target[mask])
        loss = ce + 0.5 * stop_loss
        opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(params, 1.0)
        opt.step()
        step += 1
        if step % 20 == 0:
            row = {"step": step, "lr": lr, "ce": round(ce.item(), 4), "stop": round(stop_loss.item(), 4),
                   "right": [round(x, 3) for x in right.float().mean(0).tolist()],
                   "seconds": round(time.time() - start, 1)}
            print(json.dumps(row), file=sys.stderr, flush=True)
            log.write(json.dumps(row) + "\n")
            log.flush()
        if step % args.eval_every == 0 or step == args.steps:
            model.eval()
            with torch.no_grad():
                ev = replay(model, dev, vocab, vocab_w)
            model.train()
            row = {"step": step, "dev": ev}
            print(json.dumps(row), file=sys.stderr, flush=True)
            log.write(json.dumps(row) + "\n")
            log.flush()
            save("last")
    save("final")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="cmd", required=True)
    e = sub.add_parser("eval")
    e.add_argument("data")
    e.add_argument("ckpt", nargs="?")
    e.add_argument("--draft", type=int, default=3)
    e.add_argument("--confidence", type=float, default=CONFIDENCE)
    e.add_argument("--context", type=int, default=0, help="final states of earlier positions the drafter reads")
    t = sub.add_parser("train")
    t.add_argument("train")
    t.add_argument("dev")
    t.add_argument("out")
    t.add_argument("--init", default=None, help="start from these drafter weights (default: the shipped MSD)")
    t.add_argument("--steps", type=int, default=3000)
    t.add_argument("--lr", type=float, default=1e-4)
    t.add_argument("--warmup", type=int, default=50)
    t.add_argument("--batch", type=int, default=256)
    t.add_argument("--draft", type=int, default=3)
    t.add_argument("--eval-every", type=int, default=250)
    t.add_argument("--context", type=int, default=0, help="final states of earlier positions the drafter reads")
    t.add_argument("--threads", type=int, default=2)
    t.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    {"eval": cmd_eval, "train": cmd_train}[args.cmd](args)


if __name__ == "__main__":
    main()
