"""Continuous batching as `hamburger serve`'s scheduler runs it, in one process (no HTTP): the 16 chat and GSM8K dev
prompts of `benchmarks/load_test.py --prompts dev`, greedy, 128 new tokens, queued at once; a batch of up to B rows
runs with the server's verify-mode drafting on a CPU (prompt lookup, the checkpoint's n-gram table, drafts only in
forwards of at most `CPU_DRAFT_ROWS` rows); a finished row is released and the next waiting prompt joins at the next
base forward (`Generation.add` from `poll`, as `serve.scheduler` does). One JSON line per (batch size, mode): wall
seconds, tokens, and each answer's token ids (to compare two versions of the code).

    python sim.py --code DIR --label NAME --rep R >> sim.jsonl   # DIR: a tree whose `hamburger` package is timed
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--code", default=str(ROOT), help="a tree whose hamburger package to import (default this one)")
    p.add_argument("--label", required=True, help="the code version's name in the output")
    p.add_argument("--rep", type=int, default=0, help="repetition number: odd ones run the modes in reverse order")
    p.add_argument("--batch-sizes", default="1,8")
    args = p.parse_args()
    sys.path[:0] = [args.code, str(ROOT)]
    # (an editable install finds its own tree before sys.path: that finder goes, so ``--code`` is what is imported)
    sys.meta_path = [f for f in sys.meta_path if not getattr(f, "__module__", "").startswith("__editable__")]
    import torch

    from hamburger.core.loading import fold_model, load_model
    from hamburger.engine.folding import DEFAULT_FOLD, parse_folding
    from hamburger.engine.lookup import PromptLookup
    from hamburger.engine.ngrams import model_ngrams
    from hamburger.engine.prompt import encode_prompt
    from hamburger.engine.sampling import DecodingConfig
    from hamburger.engine.verify import VerifyGeneration, on_base
    from hamburger.serve.server import CPU_DRAFT_ROWS
    import hamburger
    from benchmarks.load_test import prompts  # (after hamburger: it puts this tree first on sys.path)

    assert Path(hamburger.__file__).resolve().is_relative_to(Path(args.code).resolve()), hamburger.__file__
    torch.set_num_threads(2)
    model, tokenizer, _, reference = load_model(None, reference=True)
    folding = parse_folding(DEFAULT_FOLD)
    models = {"verify": (on_base(model, reference), None), "verify_fold": (fold_model(None, folding, model), folding)}
    ids = [encode_prompt(tokenizer, text) for text in prompts(16, "dev")]
    ngrams, cfg = model_ngrams(model, None), DecodingConfig(max_new_tokens=128)

    def serve(mode: str, batch: int, prompt_ids: list[list[int]]) -> dict:
        m, fold = models[mode]
        waiting, answers, run = list(range(len(prompt_ids))), {}, None
        first = [waiting.pop(0) for _ in range(min(batch, len(waiting)))]
        row_prompt = dict(enumerate(first))

        def poll():
            while waiting and run.active_rows < batch:
                i = waiting.pop(0)
                row_prompt[run.add(prompt_ids[i], cfg)] = i

        run = VerifyGeneration(m, tokenizer, [prompt_ids[i] for i in first], [cfg] * len(first),
                               draft_vocab=m.draft_vocab, fold=fold, lookup=PromptLookup(), ngrams=ngrams,
                               draft_rows=CPU_DRAFT_ROWS, poll=poll)
        start = time.perf_counter()
        forwards = 0
        for event in run:
            if event.finish_reason is not None:
                result = run.result(event.row)
                answers[row_prompt[event.row]], forwards = result.token_ids, forwards + result.forwards
                run.release(event.row)
        wall = time.perf_counter() - start
        tokens = sum(len(a) for a in answers.values())
        return {"wall_s": round(wall, 3), "tokens": tokens, "tok_s": round(tokens / wall, 2),
                "tau": round(tokens / forwards, 3), "answers": [answers[i] for i in range(len(prompt_ids))]}

    serve("verify", 2, ids[:2])  # (warm-up, untimed)
    from hamburger.bench.machine import machine_info
    machine = machine_info(torch.get_num_threads(), "float32")
    for batch in (int(b) for b in args.batch_sizes.split(",")):
        for mode in ("verify", "verify_fold")[::-1 if args.rep % 2 else 1]:
            record = serve(mode, batch, ids)
            print(json.dumps({"label": args.label, "rep": args.rep, "batch": batch, "mode": mode, **record,
                              "machine": machine}), flush=True)


if __name__ == "__main__":
    main()
