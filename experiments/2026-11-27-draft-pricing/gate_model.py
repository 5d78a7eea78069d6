"""Which drafts to ask first where prompt lookup finds no match, the n-gram table's or the MSD's? A replay, not a
measurement: session 34's per-step trace (48 dev prompts 8..31, lossless verify, greedy, the MSD drafting 3 tokens
at every step with the stop head's 1 - p_stop recorded before each) beside the base's greedy answers to the same
prompts (answers.py; lossless verify's answers are those), so the table's proposal at each MSD step of the trace can
be checked against the answer. Steps are taken as independent (the real boundaries would move). Per policy: tokens
per step over the trace's MSD steps, and the share of them that run the MSD (a few ms each).

Policies: `msd` (the old default: the MSD while 1 - p_stop >= 0.3), `table first` (the shipped order), and `gate c`:
the MSD where its first 1 - p_stop >= c, else the table where it knows the text, else the MSD at 0.3.

    python experiments/2026-11-27-draft-pricing/gate_model.py > experiments/2026-11-27-draft-pricing/gate_model.txt
"""

import json
from pathlib import Path

from hamburger.data.io import read_jsonl
from hamburger.engine.ngrams import NgramDrafts

HERE = Path(__file__).parent
TRACE = HERE.parent / "2026-11-27-lean-engine" / "trace_dev8-32.json"
DISTILLED = "data/distilled/smollm2-135m-instruct.train.jsonl.gz"
CONFIDENCE = 0.3


def msd_drafts(step: dict) -> int:
    n = 0
    while n < step["n"] and step["pc"][n] >= CONFIDENCE:
        n += 1
    return n


def main() -> None:
    steps = [s for s in json.loads(TRACE.read_text()) if not s["lookup"]]
    answers = {a["id"]: a for a in read_jsonl(HERE / "answers_dev8-64.jsonl")}
    table = NgramDrafts.count((r["response_token_ids"] for r in read_jsonl(DISTILLED)), 49152)
    for s in steps:
        a = answers[s["prompt"]]
        proposal = table.propose(a["prompt_ids"] + a["answer_ids"][:s["pos"]], 10)
        rest = a["answer_ids"][s["pos"]:]
        k = 0
        while k < len(proposal) and k < len(rest) and proposal[k] == rest[k]:
            k += 1
        s["table"], s["table_kept"] = bool(proposal), k

    def replay(choose) -> str:
        out = {}
        for source in ("t0", "gsm8k", ""):
            group = [s for s in steps if s["prompt"].startswith(source)]
            tokens = msd = 0
            for s in group:
                kind = choose(s)
                kept = s["table_kept"] if kind == "table" else min(s["kept"], msd_drafts(s)) if kind == "msd" else 0
                tokens += 1 + kept
                msd += kind == "msd"
            out[source or "all"] = f"{tokens / len(group):.3f} tokens/step, MSD in {msd / len(group):.2f}"
        return "  ".join(f"{k}: {v}" for k, v in out.items())

    share = sum(s["table"] for s in steps) / len(steps)
    print(f"{len(steps)} MSD steps of the trace; the table proposes at {share:.2f} of them")
    print(f"  {'msd (the old default)':<22} {replay(lambda s: 'msd' if msd_drafts(s) else None)}")
    print(f"  {'table first (shipped)':<22} "
          f"{replay(lambda s: 'table' if s['table'] else 'msd' if msd_drafts(s) else None)}")
    for c in (0.5, 0.6, 0.7, 0.8, 0.9):
        def gate(s, c=c):
            if s["pc"][0] >= c and msd_drafts(s):
                return "msd"
            return "table" if s["table"] else "msd" if msd_drafts(s) else None
        print(f"  {'gate ' + str(c):<22} {replay(gate)}")


if __name__ == "__main__":
    main()
