"""The base's own sampled answers to dev GSM8K rows 0-119 (three draws each, T 0.7, top-p 0.9, 256 tokens: the
base-sampled answers every sampled long-math arm of ../2026-11-27-draws/ is held to) as a distill-format file, for
`hamburger segment` to score and cut: the teacher-forced rows of tail.py. Ids get their draw: ``ID#dK``.

    python experiments/2026-11-28-tail-guard/rows.py OUT.jsonl
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from hamburger.eval.run import gsm8k_examples

HERE = Path(__file__).resolve().parent
DRAWS = HERE.parent / "2026-11-27-draws"
MORE = HERE.parent / "2026-11-27-gpu-fold-reverse/gsm8k_dev_60_120.jsonl"


def main() -> None:
    prompts = {e.id: e.prompt for e in gsm8k_examples(None, 60) + gsm8k_examples(str(MORE), 60)}
    out = []
    for part in ("rows0-60", "rows60-120"):
        for line in open(DRAWS / f"eval-{part}-s45/examples.jsonl"):
            r = json.loads(line)
            if r["method"] == "base-sampled":
                out.append({"id": f"{r['id']}#d{r.get('draw') or 0}", "prompt": prompts[r["id"]],
                            "response": r["text"]})
    with open(sys.argv[1], "w") as f:
        f.writelines(json.dumps(r) + "\n" for r in out)
    print(f"{len(out)} answers -> {sys.argv[1]}")


if __name__ == "__main__":
    main()
