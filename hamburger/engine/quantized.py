"""Quantized history: the slots a fold takes out stay in the cache's reach, stored at 8 or 4 bits.

A verify_fold cache (`engine/folding.py`) drops older answer tokens' one-token slots. With ``bits`` they are not
dropped: their keys and values move into a *store* of 8-bit values with one scale per (slot, key/value head), or of
4-bit values with one scale per 32 channels (symmetric: ``q = round(x / s)``, ``s = max|x| / 127`` or ``/ 7``; cf.
KV-cache quantization such as KIVI, Liu et al. 2024, which keeps a window of recent tokens at full precision as the
fold does). Keys and values may have their own bits (``8/4``: 8-bit keys, 4-bit values; a key's rounding moves the
softmax, so keys are the more sensitive). With ``rotate`` each head's channels are turned by one fixed orthogonal
matrix (`rotation`; cf. QuaRot, Ashkboos et al. 2024): it spreads a few large channels over all of them, so one scale
fits a group better. From the first stored slot on, the whole cache holds turned keys and values, and the queries and
the attention's output turn too (`QuantizedHistoryCache.attend`); until then the cache is an ordinary one, read as
lossless verify reads it, bit for bit. Every layer attends over the store's slots, read back as ``q * s``, and the
cache's. The cache then holds every token of the history, its older ones coarser: at 8 bits in about a quarter of
their fp32 bytes (half of bf16's), at 4 bits in about a sixth (0.28 of bf16's). A lever on the KV cache's bytes beside
the fold's, not a merge of tokens.

`QuantizedHistoryCache` is a dynamic `SlotCache` whose held slots' bytes are measured: the store's values and scales
count in `kv_bytes`, and `kv_slots` weighs a stored slot by its share of a slot's bytes. The stores of a base's sliding
layers forget, as those layers do in the cache (`SlotCache.forget`), the stored slots no query can see again. The
lean pass (`core/lean.py`) hands every layer's attention to it (`attention_hook`); transformers' own layers, for
bases without that pass, read it through their cache's ``update`` (`_ReadThrough`).
"""

from __future__ import annotations

import torch
import torch.nn.functional as F

from hamburger.core.masks import for_layer, sliding_window
from hamburger.engine.cache import SPARE_SLOTS, SlotCache, unseen
from hamburger.errors import HamburgerError

BITS = (8, 4)  # the stores there are
GROUP4 = 32  # channels per scale of the 4-bit store (or the head's, when it has fewer)


def quantize(x: torch.Tensor, bits: int = 8) -> tuple[torch.Tensor, torch.Tensor]:
    """``x`` [..., D] -> (values, scales in x's dtype): symmetric, ``q = round(x / s)``, ``s = max|x| / (2^(bits-1) -
    1)``. 8 bits: int8 values [..., D], one scale per last axis [..., 1]; 4 bits: one scale per `GROUP4` channels
    [..., D / group], the values two to a byte (uint8 [..., D / 2], ``q + 8`` in each half)."""
    top, d = 2 ** (bits - 1) - 1, x.shape[-1]
    group = d if bits == 8 else min(GROUP4, d)
    grouped = x.reshape(*x.shape[:-1], d // group, group)
    scale = (grouped.abs().amax(-1, keepdim=True) / top).clamp_min(torch.finfo(x.dtype).tiny)
    q = torch.round(grouped / scale).clamp(-top, top).reshape(x.shape)
    if bits == 8:
        return q.to(torch.int8), scale[..., 0]
    nibbles = (q + 8).to(torch.uint8)
    return nibbles[..., 0::2] | (nibbles[..., 1::2] << 4), scale[..., 0]


def rotation(d: int) -> torch.Tensor:
    """A fixed orthogonal [d, d] matrix: the normalised Sylvester-Hadamard matrix when ``d`` is a power of 2 (every
    entry +-1/sqrt(d): each rotated channel mixes all channels equally), otherwise a seeded random orthogonal one."""
    if d & (d - 1) == 0:
        h = torch.ones(1, 1, dtype=torch.float64)
        while h.shape[0] < d:
            h = torch.cat([torch.cat([h, h], 1), torch.cat([h, -h], 1)])
        return (h / d ** 0.5).float()
    q, r = torch.linalg.qr(torch.randn(d, d, dtype=torch.float64, generator=torch.Generator().manual_seed(0)))
    return (q * torch.sign(torch.diagonal(r))).float()


def round_trip(x: torch.Tensor, bits: int, turn: torch.Tensor | None = None) -> torch.Tensor:
    """What a store of ``bits`` reads back for ``x`` [..., d] (turned by ``turn`` [d, d] before rounding, if any)."""
    if turn is None:
        return dequantize(*quantize(x, bits))
    return dequantize(*quantize(x @ turn, bits)) @ turn.T


_NIBBLES: dict = {}  # (dtype, device) -> `_nibbles`' table
_PAIRS = {2: torch.int32, 4: torch.int64}  # a dtype's size -> an integer dtype that holds two of its values


def _nibbles(dtype: torch.dtype, device: torch.device) -> torch.Tensor:
    """[256, 2]: the two 4-bit values a byte of `quantize` holds (its low half first), less 8, in ``dtype``."""
    if (dtype, device) not in _NIBBLES:
        byte = torch.arange(256)
        _NIBBLES[dtype, device] = (torch.stack([byte & 15, byte >> 4], -1) - 8).to(device, dtype)
    return _NIBBLES[dtype, device]


def _unpack(values: torch.Tensor, dtype: torch.dtype) -> torch.Tensor:
    """uint8 [..., D / 2] -> ``dtype`` [..., D]: each byte's two 4-bit values less 8 (`_nibbles`). A byte's pair is
    read as one integer of twice the dtype's size (`_PAIRS`), so the lookup moves one element per byte: about 2.5x
    faster on a CPU than a two-column embedding lookup (what dtypes without such an integer take)."""
    table = _nibbles(dtype, values.device)
    pair = _PAIRS.get(table.element_size())
    if pair is None:
        return F.embedding(values.int(), table).flatten(-2)
    pairs = torch.index_select(table.view(pair)[:, 0], 0, values.reshape(-1).int())
    return pairs.view(dtype).view(*values.shape[:-1], 2 * values.shape[-1])


def dequantize(values: torch.Tensor, scales: torch.Tensor) -> torch.Tensor:
    """What `quantize` stored, read back in the scales' dtype (its bits told by the values' dtype): each value times
    its group's scale. Every layer reads its whole store at every step, so this is a few ops (`_unpack`)."""
    values = _unpack(values, scales.dtype) if values.dtype == torch.uint8 else values.to(scales.dtype)
    groups = scales.shape[-1]
    if groups == 1:
        return values * scales
    grouped = values.unflatten(-1, (groups, values.shape[-1] // groups))
    return (grouped * scales[..., None]).flatten(-2)


class _Store:
    """One layer's stored slots: keys and values [B, kv heads, slots, d (int8) or d / 2 (4 bits, uint8)] and their
    scales [B, kv heads, slots, scales per head] (an empty one: `QuantizedHistoryCache._widen`). Like the cache's
    layers (`cache.SpareSlotsLayer`) its buffers hold up to `SPARE_SLOTS` spare slots beyond the ``width`` in use, so
    storing a few slots writes them in place rather than copying the whole store; ``k``, ``ks``, ``v``, ``vs`` and
    `tensors` are views of the slots held (what attention reads and the bytes count): those in use from ``front`` on
    (a sliding layer's store forgets its first slots, `QuantizedHistoryCache.forget`). Store slot s is the buffers'
    slot s - ``base``."""

    def __init__(self, empty: torch.Tensor, key_bits: int, value_bits: int):
        self.buffers = [*quantize(empty, key_bits), *quantize(empty, value_bits)]
        self.width = self.front = self.base = 0

    def tensors(self) -> tuple[torch.Tensor, ...]:
        return tuple(t[:, :, self.front - self.base:self.width - self.base] for t in self.buffers)

    k, ks, v, vs = (property(lambda self, i=i: self.buffers[i][:, :, self.front - self.base:self.width - self.base])
                    for i in range(4))

    def set(self, tensors, front: int = 0) -> None:
        """The store's slots from ``front`` on become ``tensors`` (k, ks, v, vs), all of them in use."""
        self.buffers, self.front, self.base = list(tensors), front, front
        self.width = front + tensors[0].shape[2]

    def widen(self, width: int) -> None:
        """``width`` slots in use, the new ones empty: spare slots are zeros until used (new buffers with spare slots
        when these are full, without the slots forgotten)."""
        if width - self.base > self.buffers[0].shape[2]:
            spare = width - self.width + SPARE_SLOTS
            self.buffers = [torch.cat([t, t.new_zeros(*t.shape[:2], spare, t.shape[3])], 2) for t in self.tensors()]
            self.base = self.front
        self.width = width

    def write(self, row: int, start: int, stored) -> None:
        """Write store slots ``start``.. of ``row`` (k, ks, v, vs for them)."""
        for buffer, new in zip(self.buffers, stored):
            buffer[row, :, start - self.base:start - self.base + new.shape[1]] = new

    def forget(self, slots: int) -> None:
        self.front = min(self.front + slots, self.width)


class QuantizedHistoryCache(SlotCache):
    """A dynamic `SlotCache` whose folded slots move into a store of ``bits`` instead of leaving (the module's doc)."""

    def __init__(self, base_config, batch_size: int, device=None, bits: int = 8, value_bits: int | None = None,
                 rotate: bool = False):
        super().__init__(base_config, batch_size, device)
        head = getattr(base_config, "head_dim", None) or base_config.hidden_size // base_config.num_attention_heads
        value_bits = value_bits or bits
        for n in (bits, value_bits):
            if n not in BITS or (n == 4 and head % min(GROUP4, head)):
                raise HamburgerError(f"a quantized history holds {' or '.join(map(str, BITS))} bits (4: heads of a "
                                     f"multiple of {GROUP4} channels, or fewer); got {n} bits for heads of {head}")
        self.bits, self.value_bits = bits, value_bits
        self.turn = rotation(head).to(device) if rotate else None  # (cast to the cache's dtype when first used)
        self.turned = False  # the cache holds turned keys and values (from the first stored slot on, `_turn`)
        self.stores: list[_Store] | None = None  # one per layer, once a slot was stored
        self.stored = torch.zeros(batch_size, 0, dtype=torch.bool, device=device)  # [B, store slots]: held
        # a base with a sliding window: each stored slot's rotary position (`SlotCache.positions`; None: none)
        self.stored_positions = None if self.positions is None else torch.zeros(self.stored.shape, dtype=torch.long,
                                                                                device=device)
        self.mask: torch.Tensor | None = None  # this forward's mask over [store, cache] (`extend`)
        self.store_forgotten = 0  # the first store slots, which the forgetting layers' stores no longer hold
        self.kv.attention_hook = self  # (what `LeanStack` finds on the cache it is given)

    # ------------------------------------------------------------------ storing
    def hold(self, row: int, slots: torch.Tensor) -> None:
        """Move the keys and values of cache row ``row``'s ``slots`` (a bool mask [slots] of the cache, or indices)
        into the store; the caller marks them invalid in the cache (`FoldState.fold`), compaction frees them."""
        index = torch.nonzero(slots)[:, 0] if slots.dtype == torch.bool else slots
        n = int(index.numel())
        if not n:
            return
        start = int(self.stored[row].sum())
        if start + n > self.stored.shape[1]:
            self._widen(start + n)
        if self.turn is not None and not self.turned:
            self._turn()
        held = (index - self.forgotten).clamp(min=0)  # (where the forgetting layers hold them, if they still do)
        for i, (layer, store) in enumerate(zip(self.kv.layers, self.stores)):
            at = held if i in self.forgetting else index
            store.write(row, start, (*quantize(layer.keys[row, :, at], self.bits),  # (turned already, with ``rotate``)
                                     *quantize(layer.values[row, :, at], self.value_bits)))
        self.stored[row, start:start + n] = True
        if self.stored_positions is not None:
            self.stored_positions[row, start:start + n] = self.positions[row, index]

    def _turn(self) -> None:
        """Turn every row's keys and values in the cache (in place), once: from now on the new ones turn as they come
        in (`attend`). Until the first stored slot the turn would cost four products a layer and change nothing but
        the rounding, so the cache waits for it."""
        self.turn = self.turn.to(self.kv.layers[0].keys.dtype)
        for layer in self.kv.layers:
            layer.keys.copy_(layer.keys @ self.turn)
            layer.values.copy_(layer.values @ self.turn)
        self.turned = True

    def _widen(self, width: int) -> None:
        """Give every row of the store ``width`` slots (the new ones empty)."""
        extra = width - self.stored.shape[1]
        if self.stores is None:
            self.stores = []
            for layer in self.kv.layers:
                shape = (self.batch_size, layer.keys.shape[1], 0, layer.keys.shape[3])
                self.stores.append(_Store(layer.keys.new_zeros(shape), self.bits, self.value_bits))
        for store in self.stores:
            store.widen(width)
        self.stored = torch.cat([self.stored, self.stored.new_zeros(self.batch_size, extra)], 1)
        if self.stored_positions is not None:
            self.stored_positions = torch.cat([self.stored_positions,
                                               self.stored_positions.new_zeros(self.batch_size, extra)], 1)

    # ------------------------------------------------------------------ attention
    def extend(self, new_valid: torch.Tensor, positions: torch.Tensor | None = None):
        """`SlotCache.extend`; also the mask every layer attends with over [store, cache] (``self.mask``; for a base
        with a sliding window, one per layer type as `SlotCache.extend`'s, the stored slots a window back hidden in
        the sliding layers)."""
        mask = super().extend(new_valid, positions)
        window, _ = sliding_window(self.text_config)
        queries = (mask["full_attention"] if isinstance(mask, dict) else mask).shape[2]
        held = self.stored[:, None, None, :].expand(-1, 1, queries, -1)
        if window is None:
            self.mask = torch.cat([held, mask], -1)
            return mask
        recent = (positions.to(self.stored.device)[:, :, None] - self.stored_positions[:, None, :]) < window
        slid = (held & recent[:, None])[..., self.store_forgotten:]  # (`forget` ran in `SlotCache.extend`)
        if isinstance(mask, dict):
            self.mask = {"full_attention": torch.cat([held, mask["full_attention"]], -1),
                         "sliding_attention": torch.cat([slid, mask["sliding_attention"]], -1)}
        else:  # (every layer slides)
            self.mask = torch.cat([slid, mask], -1)
        return mask

    def forget(self, new_valid: torch.Tensor, positions: torch.Tensor) -> None:
        """`SlotCache.forget`, and the same for the sliding layers' stores: their first slots that every row holds
        (a row's next stored slots are still to come) and no query of any row can see again."""
        super().forget(new_valid, positions)
        if self.stores is None or self.stored.shape[1] - self.store_forgotten <= self.window:
            return
        span = slice(self.store_forgotten, None)
        first = self.first_queries(new_valid, positions)
        seen = (~self.stored[:, span] | (self.stored_positions[:, span] > (first - self.window)[:, None])).any(0)
        slots = unseen(seen)
        for i in self.forgetting:
            self.stores[i].forget(slots)
        self.store_forgotten += slots

    def attends(self, layer_idx: int) -> bool:
        return self.stores is not None or self.turned

    def read_through(self, mask):
        """(the cache as transformers' own layers take it, the mask they attend with over [store, cache]): for a base
        without the lean pass (`HamburgerModel.base_forward`)."""
        return _ReadThrough(self), self.mask

    def attend(self, attend, module, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, mask: torch.Tensor,
               scaling: float) -> torch.Tensor:
        """A layer's attention output [B, S, H, d] for queries ``q`` [B, H, S, d] and new keys and values ``k``,
        ``v`` [B, kv heads, S, d] (written to the cache): ``attend`` over the store's slots, read back, and the
        cache's, with ``mask`` for the cache's and the store's held slots visible to every query (`extend`'s
        ``self.mask``, made once per forward).

        With ``rotate``, once the cache is turned (`_turn`) it lives in the turned channels: the new keys and values
        are turned as they come in, and so are the queries (an orthogonal turn keeps every dot product), and the
        output is turned back. So the store is rounded and read in the turned channels as they are, at a cost that
        grows with the forward's new tokens, never with the history."""
        if self.turned:
            q, k, v = q @ self.turn, k @ self.turn, v @ self.turn
        k, v = self.kv.update(k, v, module.layer_idx)
        if self.stores is not None:
            store = self.stores[module.layer_idx]
            k = torch.cat([dequantize(store.k, store.ks), k], 2)
            v = torch.cat([dequantize(store.v, store.vs), v], 2)
            mask = for_layer(self.mask, self.text_config, module.layer_idx)
        out = attend(module, q, k, v, mask, dropout=0.0, scaling=scaling)[0]
        return out @ self.turn.T if self.turned else out

    # ------------------------------------------------------------------ rows
    def select_rows(self, rows: torch.Tensor) -> None:
        """`SlotCache.select_rows`; the store keeps only the slots the rows left hold (a row's held slots are the
        first ones of its store, so the store narrows to the most any row left holds: a row that leaves takes the
        width only it needed with it)."""
        super().select_rows(rows)
        self.stored = self.stored[rows]
        width = int(self.stored.sum(1).max()) if self.stored.numel() else 0  # (every row holds the forgotten slots)
        self.stored = self.stored[:, :width]
        if self.stored_positions is not None:
            self.stored_positions = self.stored_positions[rows][:, :width]
        for store in self.stores or []:
            store.set([t[rows, :, :width - store.front] for t in store.tensors()], store.front)

    def merge(self, other: "SlotCache") -> None:
        if not isinstance(other, QuantizedHistoryCache) or (other.bits, other.value_bits, other.turn is None) != (
                self.bits, self.value_bits, self.turn is None):
            raise HamburgerError("rows without this batch's quantized history cannot join it")
        if self.turned != other.turned:  # (rows that join a turned cache turn too, and the other way round)
            (other if self.turned else self)._turn()
        super().merge(other)
        width = max(self.stored.shape[1], other.stored.shape[1])
        stores = self.stores is not None or other.stores is not None  # (one may be empty: its rows hold nothing now)
        for cache in (self, other):
            if cache.stored.shape[1] < width or (cache.stores is None and stores):
                cache._widen(width)
        forgotten = min(self.store_forgotten, other.store_forgotten)
        for i, (mine, theirs) in enumerate(zip(self.stores or [], other.stores or [])):
            front = forgotten if i in self.forgetting else 0
            # (the slots a store forgot come back as zeros: no query of its rows sees them)
            parts = [[torch.cat([t.new_zeros(*t.shape[:2], store.front - front, t.shape[3]), t], 2)
                      for t in store.tensors()] for store in (mine, theirs)]
            mine.set([torch.cat([a, b]) for a, b in zip(*parts)], front)
        self.store_forgotten = forgotten
        self.stored = torch.cat([self.stored, other.stored])
        if self.stored_positions is not None:
            self.stored_positions = torch.cat([self.stored_positions, other.stored_positions])

    # ------------------------------------------------------------------ measuring
    def store_bytes(self) -> int:
        return sum(t.numel() * t.element_size() for store in self.stores or [] for t in store.tensors())

    def kv_bytes(self) -> int:
        return super().kv_bytes() + self.store_bytes()

    def stored_share(self) -> float:
        """A stored slot's bytes over a cache slot's (both across all layers)."""
        slot = sum(self.slot_bytes())
        stored = sum(self._stored_slot_bytes())
        return stored / slot if slot else 0.0

    def _stored_slot_bytes(self) -> tuple[int, int]:
        """(bytes of one stored slot of one row across the stores that hold every slot, and across the forgetting
        ones)."""
        if self.stores is None:
            return 0, 0
        return self.by_forgetting([sum(t.shape[1] * t.shape[3] * t.element_size() for t in store.buffers)
                                   for store in self.stores])

    def kv_slots(self) -> list[int]:
        """Whole-slot equivalents each row holds: its slots in the cache, plus its stored ones weighed by their share
        of a slot's bytes (rounded)."""
        share = self.stored_share() if self.stores is not None else 0.0
        return [round(main + held * share) for main, held in zip(super().kv_slots(), self.stored.sum(1).tolist())]

    def row_bytes(self) -> list[int]:
        """`SlotCache.row_bytes`, plus each row's stored slots in every store that holds them."""
        every, forgetting = self._stored_slot_bytes()
        stored = self.stored.sum(1) * every + self.stored[:, self.store_forgotten:].sum(1) * forgetting
        return [a + b for a, b in zip(super().row_bytes(), stored.tolist())]


class _ReadThrough:
    """A `QuantizedHistoryCache` as transformers' attention layers use their cache (``past_key_values``), for bases
    without the lean pass: a layer's ``update`` writes its new keys and values into the cache (turned, once the cache
    is) and returns what `QuantizedHistoryCache.attend` reads, the store's slots read back and then the cache's, turned
    back, so the layer's own queries and attention read them. The same attention as `attend`'s, whose products turn
    the queries and the output instead: equal up to rounding. Everything else is the cache's own."""

    def __init__(self, owner: QuantizedHistoryCache):
        self.owner = owner

    def update(self, key_states: torch.Tensor, value_states: torch.Tensor, layer_idx: int, *args, **kwargs):
        owner = self.owner
        if owner.turned:
            key_states, value_states = key_states @ owner.turn, value_states @ owner.turn
        keys, values = owner.kv.update(key_states, value_states, layer_idx)
        if owner.stores is not None:
            store = owner.stores[layer_idx]
            keys = torch.cat([dequantize(store.k, store.ks), keys], 2)
            values = torch.cat([dequantize(store.v, store.vs), values], 2)
        if owner.turned:
            keys, values = keys @ owner.turn.T, values @ owner.turn.T
        return keys, values

    def __getattr__(self, name: str):
        return getattr(self.owner.kv, name)
