"""Check 3 of README: session 53's timing (`../2026-11-29-default-bits/speed.py`: HF `generate`, the shipped
verify_fold and a candidate fold, greedy, batch 1, 8 bench prompts, 256 tokens, 3 repetitions interleaved) with this
session's candidate.

    python experiments/2026-11-29-rotated-store/speed.py > experiments/2026-11-29-rotated-store/speed.json
"""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parents[1] / "2026-11-29-default-bits"))
import speed  # noqa: E402

speed.FOLDS = {"verify_fold": speed.SHIPPED, "verify_fold+k8v4r": "segments:60:0.45:none:bits=8/4:rotate"}

if __name__ == "__main__":
    speed.main()
