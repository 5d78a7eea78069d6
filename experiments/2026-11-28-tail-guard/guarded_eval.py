"""`hamburger eval` with a sampling guard on verify_fold's folded rows: a sampled row that has folded draws at
temperature GUARD_T (environment) instead of its own, from that forward on (the drafts are drawn as before; the
acceptance test makes the kept tokens follow the guarded distribution). The pre-registered curve point of the README
(the guard with the lowest teacher-forced spike mass, T 0.5); an experiment's patch, not a library feature.

    GUARD_T=0.5 python experiments/2026-11-28-tail-guard/guarded_eval.py eval ARGS...
"""

from __future__ import annotations

import dataclasses
import os
import sys

from hamburger.cli import main
from hamburger.engine import verify

TEMPERATURE = float(os.environ["GUARD_T"])
_accept = verify.VerifyGeneration._accept


def guarded_accept(self, final, rows, drafts):
    own = [r.cfg for r in rows]
    for r in rows:
        if r.folding is not None and r.folding.folds > 0 and not r.cfg.greedy:
            r.cfg = dataclasses.replace(r.cfg, temperature=TEMPERATURE)
    try:
        return _accept(self, final, rows, drafts)
    finally:
        for r, cfg in zip(rows, own):
            r.cfg = cfg


verify.VerifyGeneration._accept = guarded_accept
sys.exit(main())
