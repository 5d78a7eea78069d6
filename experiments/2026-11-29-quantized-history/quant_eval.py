"""`hamburger eval` with verify mode whose older answer tokens are stored at low precision instead of folded: a pilot
of quantized history as a KV lever beside the fold (an experiment's patch, not a library feature).

Nothing folds. Once an answer token is older than the fold's window (``--verify-fold GROUPS:WINDOW:SHARE...``: only
its window and share are read), its keys and values in every layer are rounded, in place, to what a store of
``QUANT_BITS`` bits (default 8) would hold: symmetric, one scale per (token, key/value head) for the keys and the
values apart, ``round(x / s) * s`` with ``s = max|x| / (2^(bits-1) - 1)`` over the head's channels
(``QUANT_GROUP`` channels per scale when set, e.g. 32). The cache keeps fp32 tensors, so its measured bytes do not
shrink: this measures what the base writes reading such a history, and the bytes a real store would hold are
reported by the caller from the token counts. It needs ``--full-heads none`` (a split cache is not patched).

    QUANT_BITS=8 python experiments/2026-11-29-quantized-history/quant_eval.py eval --verify-fold segments:60:0.45 \
        --full-heads none ARGS...
"""

from __future__ import annotations

import os
import sys

import torch

from hamburger.cli import main
from hamburger.engine import verify
from hamburger.engine.folding import FoldState

BITS = int(os.environ.get("QUANT_BITS", "8"))
GROUP = int(os.environ.get("QUANT_GROUP", "0"))  # channels per scale (0: the whole head)


def rounded(x: torch.Tensor, bits: int = BITS, group: int = GROUP) -> torch.Tensor:
    """``x`` [..., D] as a symmetric ``bits``-bit store with one scale per ``group`` channels (0: all D) holds it."""
    shape = x.shape
    if group:
        x = x.reshape(*shape[:-1], shape[-1] // group, group)
    top = 2 ** (bits - 1) - 1
    scale = x.abs().amax(-1, keepdim=True).clamp_min(1e-12) / top
    return (torch.round(x / scale).clamp(-top, top) * scale).reshape(shape)


class QuantState(FoldState):
    """A `FoldState` that never folds: it tracks which answer tokens are older than the window (`quantize`)."""

    def __init__(self, folding, vocab_size):
        super().__init__(folding, vocab_size)
        self.quantized = 0  # answer tokens before this are stored rounded

    def due(self, fed):
        return []

    def quantize(self, cache, b: int, fed: int) -> None:
        """Round the slots of answer tokens [quantized, fed - window) of cache row ``b`` in every layer."""
        limit = fed - self.folding.window_at(fed)
        if limit <= self.quantized:
            return
        ranks = torch.tensor([len(self.live) - k for k, i in enumerate(self.live) if self.quantized <= i < limit])
        valid = cache.valid[b]
        from_end = valid.flip(0).cumsum(0).flip(0)
        slots = torch.nonzero(valid & torch.isin(from_end, ranks))[:, 0]
        assert len(slots) == len(ranks), (len(slots), len(ranks))
        for layer in cache.kv.layers:
            for t in (layer.keys, layer.values):
                t[b, :, slots] = rounded(t[b, :, slots])
        self.quantized = limit


def fold_out(cache, b, r):
    if r.folding is not None:
        r.folding.quantize(cache, b, r.fed - len(r.prompt_ids))
    return []


verify.FoldState = QuantState
verify.VerifyGeneration._fold_out = staticmethod(fold_out)
if __name__ == "__main__":
    sys.exit(main())
