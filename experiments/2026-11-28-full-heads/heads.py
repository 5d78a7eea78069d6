"""Verify_fold whose chosen key/value heads keep the whole history: an experiment's patch, not a library feature.

The default fold drops a group's later tokens from every layer's cache. Here a few (layer, key/value head) pairs, the
*full heads*, keep every answer token's slot, the other heads read the fold as before (cf. the retrieval heads of
DuoAttention, Xiao et al. 2024, which keep a full cache for a few heads and a short one for the rest). The cache
itself stays as the engine keeps it (holes in the folded view), and the slots the fold took out are marked beside it,
so attention gets two masks: channel 0 the folded view, channel 1 the folded view with the fold's holes seen again;
each layer's query heads pick their channel (the query heads of one key/value head share it). The KV a real cache
would hold is the folded slots for every head but the full ones: each full head adds ``1 / (layers x kv heads)`` of
the fold's saved slots (as `../2026-11-27-draws/summary.py` counts it). Slots a fold took out stay in the buffers
(compaction squeezes out only slots that neither view reads), so the patch costs memory; its decodes measure
quality, not speed.

    FULL_HEADS='[[layer, kv_head], ...]' python experiments/2026-11-28-full-heads/heads.py eval ARGS...
"""

from __future__ import annotations

import json
import os
import sys

import torch

from hamburger.core import lean as core_lean
from hamburger.core.masks import slot_mask
from hamburger.engine import verify
from hamburger.engine.cache import COMPACT_AT, SlotCache

FULL: set[tuple[int, int]] = set()  # the full heads: (layer, key/value head)


def set_full_heads(units) -> None:
    """Make ``units`` ((layer, kv head) pairs) read the full history; every other head reads the fold."""
    FULL.clear()
    FULL.update((int(layer), int(g)) for layer, g in units)


def pick_channels(mask: torch.Tensor | None, attn) -> torch.Tensor | None:
    """A two-channel mask [B, 2, q, k] -> the [B, H, q, k] mask of attention module ``attn``'s query heads (the
    folded channel alone, [B, 1, q, k], where none of its heads is full)."""
    if mask is None or mask.ndim != 4 or mask.shape[1] != 2:
        return mask
    full = [g for layer, g in FULL if layer == attn.layer_idx]
    if not full:
        return mask[:, :1]
    per_kv = attn.config.num_attention_heads // attn.config.num_key_value_heads
    sel = torch.tensor([int(h // per_kv in full) for h in range(attn.config.num_attention_heads)], device=mask.device)
    return mask.index_select(1, sel)


_lean_init = core_lean.LeanStack.__init__


def _lean_init_two_channel(self, stack):
    _lean_init(self, stack)
    attend = self.attend

    def attend_by_head(module, q, k, v, mask, *args, **kwargs):
        return attend(module, q, k, v, pick_channels(mask, module), *args, **kwargs)

    self.attend = attend_by_head


_init, _extend, _drop_last = SlotCache.__init__, SlotCache.extend, SlotCache.drop_last
_select_rows, _merge = SlotCache.select_rows, SlotCache.merge


def _init_folded(self, *args, **kwargs):
    _init(self, *args, **kwargs)
    self.folded = torch.zeros_like(self.valid)  # slots a fold took out (channel 1 reads them again)


def _extend_two_channel(self, new_valid):
    if self.static:
        raise RuntimeError("full heads need the dynamic cache")
    folded = _extend(self, new_valid)
    self.folded = torch.cat([self.folded, self.folded.new_zeros(new_valid.shape)], 1)
    q = new_valid.shape[1]
    return torch.cat([folded, slot_mask(self.valid | self.folded, self.filled - q, q)], 1)


def _drop_last_folded(self, n):
    _drop_last(self, n)
    self.folded = self.folded[:, :self.filled]


def _select_rows_folded(self, rows):
    _select_rows(self, rows)
    self.folded = self.folded[rows]


def _merge_folded(self, other):
    width = max(self.num_slots, other.num_slots)  # (`SlotCache.merge` left-pads both to it)
    folded = [torch.cat([c.folded.new_zeros(c.batch_size, width - c.num_slots), c.folded], 1) for c in (self, other)]
    _merge(self, other)
    self.folded = torch.cat(folded)


def _compact_both(self):
    """`SlotCache.compact`, squeezing out only the slots neither view reads."""
    held = self.valid | self.folded
    width = int(held.sum(1).max()) if self.batch_size else 0
    if width == self.filled:
        return
    index = torch.sort(held.to(torch.int8), dim=1, stable=True).indices[:, self.filled - width:]
    for layer in self.kv.layers:
        for name in ("keys", "values"):
            t = getattr(layer, name)
            setattr(layer, name, t.gather(2, index[:, None, :, None].expand(-1, t.shape[1], -1, t.shape[3])))
    self.valid, self.folded = self.valid.gather(1, index), self.folded.gather(1, index)
    self.filled = width


def _compact_if_holey_both(self):
    if int((~(self.valid | self.folded)).sum()) > COMPACT_AT * self.valid.numel():
        _compact_both(self)


_fold_out = verify.VerifyGeneration._fold_out


def _fold_out_marked(cache, b, r):
    before = cache.valid[b].clone()
    groups = _fold_out(cache, b, r)
    cache.folded[b] |= before & ~cache.valid[b]
    return groups


def install() -> None:
    """Patch the engine: two-channel masks, folded slots marked and kept, each head reading its channel."""
    core_lean.LeanStack.__init__ = _lean_init_two_channel
    SlotCache.__init__, SlotCache.extend = _init_folded, _extend_two_channel
    SlotCache.drop_last, SlotCache.select_rows, SlotCache.merge = _drop_last_folded, _select_rows_folded, _merge_folded
    SlotCache.compact, SlotCache.compact_if_holey = _compact_both, _compact_if_holey_both
    verify.VerifyGeneration._fold_out = staticmethod(_fold_out_marked)


if __name__ == "__main__":
    from hamburger.cli import main

    install()
    set_full_heads(json.loads(os.environ.get("FULL_HEADS", "[]")))
    print(f"full heads: {sorted(FULL)}", file=sys.stderr)
    sys.exit(main(sys.argv[1:]))
