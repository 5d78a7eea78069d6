"""The base model's KV cache, addressed by slot and sized by slots.

Every prompt token and every merged token group takes exactly one slot; the rotary position of a
slot is the original index of its (last) token, so slot != position after the first merge. The
cache only ever holds the entries that were fed to the base model, so its bytes shrink with tau.
Rows of a batch are left-padded to a common slot count; ``valid`` marks which slots hold real
entries, and each macro step adds one slot to every row whatever its group length.

With ``capacity`` the cache is static: every layer's keys and values are allocated once for that
many slots (transformers' `StaticCache`) and written in place, so every macro step has the same
shapes (what `torch.compile` with CUDA graphs needs); the attention mask spans all of them and
hides the slots not written yet. Otherwise the cache grows by one slot per step (`DynamicCache`).

A base whose attention slides over the last W positions in some layers (Gemma 2 and 3, Mistral, Phi-3) never reads
a slot W or more positions before a query there. A dynamic cache lets those layers forget the slots no later query
of any row can see (`SlotCache.forget`): they hold about W slots each, as transformers' own sliding layers do, while
the other layers hold every slot.
"""

from __future__ import annotations

import copy

import torch
from transformers import DynamicCache, PretrainedConfig, StaticCache
from transformers.cache_utils import DynamicLayer, DynamicSlidingWindowLayer, StaticLayer, StaticSlidingWindowLayer

from hamburger.core.masks import FOREVER, by_layer_type, sliding_layers, sliding_window, slot_mask
from hamburger.errors import HamburgerError

COMPACT_AT = 0.25  # compact a dynamic cache once this fraction of its slots are holes
SPARE_SLOTS = 32  # a dynamic cache's buffers grow by this many slots beyond what a write needs (`SpareSlotsLayer`)


def cache_bytes(cache) -> tuple[int, int]:
    """(bytes held by the key and value tensors of every layer of a transformers cache, measured; slots of
    its last tensor, i.e. of every row)."""
    total, slots = 0, 0
    for layer in getattr(cache, "layers", []):
        for t in (getattr(layer, "keys", None), getattr(layer, "values", None)):
            if isinstance(t, torch.Tensor):
                total += t.numel() * t.element_size()
                slots = t.shape[-2]
    return total, slots


def unseen(seen: torch.Tensor) -> int:
    """How many of the first slots no query sees (``seen`` [slots]: whether some query of some row sees each)."""
    return int(torch.where(seen.any(), seen.int().argmax(), seen.shape[0]))


def _pad_front(layers, slots: int) -> None:
    """Put ``slots`` zero slots before every row's slots in each of ``layers`` (their keys and values)."""
    for layer in layers:
        for name in ("keys", "values"):
            t = getattr(layer, name)
            setattr(layer, name, torch.cat([t.new_zeros(*t.shape[:2], slots, t.shape[3]), t], 2))


def _held_slots(name: str) -> property:
    """A `SpareSlotsLayer` attribute: reads the view of the slots held in the buffer ``name``; set, the tensor given
    becomes the buffer, all of it held."""

    def read(layer) -> torch.Tensor | None:
        buffer, front, held = getattr(layer, name)
        return None if buffer is None else buffer[..., front:held, :]

    def write(layer, t: torch.Tensor | None) -> None:
        setattr(layer, name, (t, 0, 0 if t is None else t.shape[-2]))

    return property(read, write)


class SpareSlotsLayer(DynamicLayer):
    """A `DynamicLayer` whose keys and values are the first slots of buffers with up to `SPARE_SLOTS` spare ones: a
    step writes its new slots in place, where `DynamicLayer` copies the whole cache into a new tensor at every step
    (`torch.cat`: a copy that grows with the cache). ``keys`` and ``values`` are views of the slots held (what
    attention reads, what `cache_bytes` counts; the spare slots are allocated, unwritten); setting them (merging rows,
    compacting) hands the layer new buffers, and cropping only shortens the views. Forgetting its first slots (a
    sliding layer's, `SlotCache.forget`) moves the views' start; the next new buffer leaves them out."""

    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        self.keys = self.values = None

    def lazy_initialization(self, key_states: torch.Tensor, value_states: torch.Tensor) -> None:
        self.dtype, self.device = key_states.dtype, key_states.device
        self.keys, self.values = key_states[..., :0, :], value_states[..., :0, :]
        self.is_initialized = True

    # keys and values: each a (buffer, first slot held, end of the slots held) triple, set apart, since callers replace
    # one, then read the other
    keys = _held_slots("_keys")
    values = _held_slots("_values")

    def update(self, key_states: torch.Tensor, value_states: torch.Tensor, *args, **kwargs):
        if not self.is_initialized:
            self.lazy_initialization(key_states, value_states)
        for name, new in (("_keys", key_states), ("_values", value_states)):
            buffer, front, held = getattr(self, name)
            if held + new.shape[-2] > buffer.shape[-2]:  # a new buffer with spare slots; the held ones copied once
                spare = new.new_empty(*new.shape[:2], new.shape[-2] + SPARE_SLOTS, new.shape[3])
                buffer, front, held = torch.cat([buffer[..., front:held, :], spare], -2), 0, held - front
            buffer[..., held:held + new.shape[-2], :] = new
            setattr(self, name, (buffer, front, held + new.shape[-2]))
        return self.keys, self.values

    def crop(self, tokens_to_remove: int) -> None:
        if tokens_to_remove > 0:
            raise ValueError("crop takes a negative count of slots to remove")
        if self.is_initialized:
            for name in ("_keys", "_values"):
                buffer, front, held = getattr(self, name)
                setattr(self, name, (buffer, front, max(front, held + tokens_to_remove)))

    def batch_select_indices(self, indices: torch.Tensor) -> None:
        """Keep the rows ``indices``; a layer that holds no slot now (it forgot them all) keeps its rows too."""
        if self.is_initialized:
            self.keys, self.values = self.keys[indices, ...], self.values[indices, ...]

    def forget(self, slots: int) -> None:
        """Stop holding the first ``slots`` slots held."""
        for name in ("_keys", "_values"):
            buffer, front, held = getattr(self, name)
            setattr(self, name, (buffer, min(front + slots, held), held))


def spare_slots_cache(base_config) -> DynamicCache:
    """A `DynamicCache` for ``base_config`` whose attention layers are `SpareSlotsLayer`s: sliding-window layers too
    (a slot's distance is in positions, not slots: the masks hide what is out of the window, `masks.by_layer_type`,
    and `SlotCache.forget` lets those layers drop it)."""
    cache = DynamicCache(config=base_config)
    cache.layers = [SpareSlotsLayer() if type(layer) in (DynamicLayer, DynamicSlidingWindowLayer) else layer
                    for layer in cache.layers]
    return cache


def whole_static_cache(base_config, capacity: int) -> StaticCache:
    """A `StaticCache` of ``capacity`` slots in every attention layer, sliding-window ones too, which keep every slot
    (the masks hide what is out of their window)."""
    cache = StaticCache(config=base_config, max_cache_len=capacity)
    cache.layers = [StaticLayer(max_cache_len=capacity) if type(layer) is StaticSlidingWindowLayer else layer
                    for layer in cache.layers]
    return cache


class SlotCache:
    def __init__(self, base_config, batch_size: int, device=None, capacity: int | None = None):
        self.capacity = capacity
        if capacity:
            self.kv = whole_static_cache(base_config, capacity)
            self.valid = torch.zeros(batch_size, capacity, dtype=torch.bool, device=device)
        else:
            self.kv = spare_slots_cache(base_config)
            self.valid = torch.zeros(batch_size, 0, dtype=torch.bool, device=device)
        self.filled = 0  # slots written per row, padding included
        # a base with a sliding window: the text config its masks follow, and each slot's rotary position (None: none)
        self.text_config = base_config.get_text_config() if hasattr(base_config, "get_text_config") else base_config
        self.window = sliding_window(self.text_config)[0]
        self.positions = None
        if self.window is not None:
            self.positions = torch.zeros(self.valid.shape, dtype=torch.long, device=device)
        # the sliding layers, which forget what no query can see again (`forget`; a static cache keeps every slot, as
        # does an engine whose later queries may sit any distance before earlier ones: it empties this list)
        self.forgetting: list[int] = [] if capacity else sliding_layers(self.text_config)
        self.forgotten = 0  # the first slots, which the forgetting layers no longer hold
        self.reach = 0  # positions a later query may sit before a step's first one (the engine's: re-read groups)

    @property
    def static(self) -> bool:
        return bool(self.capacity)

    @property
    def batch_size(self) -> int:
        return self.valid.shape[0]

    @property
    def num_slots(self) -> int:
        """Slots written per row, padding included."""
        return self.filled

    def kv_slots(self) -> list[int]:
        """Real (non-padding) entries each row holds."""
        return self.valid.sum(1).tolist()

    def kv_bytes(self) -> int:
        """Bytes held by the key and value tensors of every layer (measured, not estimated)."""
        return cache_bytes(self.kv)[0]

    def slot_bytes(self) -> tuple[int, int]:
        """(bytes of one slot of one row across the layers that hold every slot, and across the forgetting ones)."""
        return self.by_forgetting([0 if getattr(layer, "keys", None) is None else  # (no forward yet)
                                   sum(t.shape[1] * t.shape[3] * t.element_size() for t in (layer.keys, layer.values))
                                   for layer in self.kv.layers])

    def by_forgetting(self, sizes: list[int]) -> tuple[int, int]:
        """(the sum of ``sizes``, one per layer, over the layers that hold every slot, and over the forgetting ones)."""
        forgetting = sum(sizes[i] for i in self.forgetting)
        return sum(sizes) - forgetting, forgetting

    def row_bytes(self) -> list[int]:
        """Bytes each row's entries take: each layer's bytes per slot times the row's real entries it holds (the
        forgetting layers hold those from `forgotten` on)."""
        every, forgetting = self.slot_bytes()
        held = self.valid.sum(1) * every
        if forgetting:
            held = held + self.valid[:, self.forgotten:].sum(1) * forgetting
        return held.tolist()

    def ordinary_bytes(self, slots: int) -> int:
        """Bytes a decode of one slot per token holding ``slots`` slots would take in this cache's layers (the
        forgetting ones hold a window of them)."""
        every, forgetting = self.slot_bytes()
        return slots * every + min(slots, self.window or slots) * forgetting

    def extend(self, new_valid: torch.Tensor, positions: torch.Tensor | None = None):
        """Reserve ``q`` new slots per row (``new_valid`` [B, q], at rotary ``positions`` [B, q]); return the
        [B, 1, q, slots] attention mask.

        Query i of row b attends to every earlier valid slot of row b and to itself (a padding query
        attends only to itself, so it stays finite and is never read). For a base with a sliding window the mask
        is what its layers read (`masks.by_layer_type`: a mask per layer type, or the windowed one), which needs
        ``positions``.
        """
        q = new_valid.shape[1]
        if self.static:
            if self.filled + q > self.capacity:
                raise HamburgerError(f"the static KV cache holds {self.capacity} slots; {self.filled + q} needed")
            self.valid[:, self.filled:self.filled + q] = new_valid.to(self.valid.device)
        else:
            self.valid = torch.cat([self.valid, new_valid.to(self.valid.device)], 1)
        self.filled += q
        mask = slot_mask(self.valid, self.filled - q, q)
        if self.positions is None:
            return mask
        if positions is None:
            raise HamburgerError("a base with a sliding window needs the new slots' positions")
        positions = positions.to(self.positions.device)
        if self.static:
            self.positions[:, self.filled - q:self.filled] = positions
        else:
            self.positions = torch.cat([self.positions, positions], 1)
        masks = by_layer_type(mask, self.text_config, positions, self.positions)
        if not self.forgetting:
            return masks
        self.forget(new_valid, positions)
        if isinstance(masks, dict):
            return {**masks, "sliding_attention": masks["sliding_attention"][..., self.forgotten:]}
        return masks[..., self.forgotten:]

    def forget(self, new_valid: torch.Tensor, positions: torch.Tensor) -> None:
        """Let the sliding layers forget the first slots that no query of any row can see again, once they hold more
        than a window of them: a slot W or more positions before the row's first query of this step (new slots
        ``new_valid`` [B, q] at ``positions``) less `reach` (no later query of the row sits before that), or one that
        holds no entry of the row. A row with no query in this step keeps its slots."""
        old = self.filled - new_valid.shape[1]
        if old - self.forgotten <= self.window:
            return
        span = slice(self.forgotten, old)
        first = self.first_queries(new_valid, positions)
        slots = unseen((self.valid[:, span] & (self.positions[:, span] > (first - self.window)[:, None])).any(0))
        for i in self.forgetting:
            self.kv.layers[i].forget(slots)
        self.forgotten += slots

    def first_queries(self, new_valid: torch.Tensor, positions: torch.Tensor) -> torch.Tensor:
        """[B] the position before which no later query of each row sits: its first new slot's (``new_valid``,
        ``positions`` [B, q]) less `reach`; a row without a new slot: minus `FOREVER`."""
        asks = new_valid.to(positions.device)
        first = torch.where(asks, positions, FOREVER).amin(1)
        return torch.where(asks.any(1), first - self.reach, -FOREVER)

    def merge(self, other: "SlotCache") -> None:
        """Append the rows of `other` (continuous batching). Both caches are left-padded with
        invalid slots to the same slot count, so every row keeps its own entries and positions."""
        if self.static or other.static:
            raise HamburgerError("rows cannot join a batch with a static KV cache (use the dynamic cache)")
        width = max(self.num_slots, other.num_slots)
        # the forgetting layers of both hold the slots from the first either still holds (a padding slot is forgotten
        # from the start; the slots one of them forgot come back as zeros: no query of its rows sees them)
        forgotten = min(cache.forgotten + width - cache.num_slots for cache in (self, other))
        for cache in (self, other):
            pad = width - cache.num_slots
            if pad:
                _pad_front([layer for i, layer in enumerate(cache.kv.layers) if i not in cache.forgetting], pad)
                cache.valid = torch.cat([cache.valid.new_zeros(cache.batch_size, pad), cache.valid], 1)
                if cache.positions is not None:
                    cache.positions = torch.cat([cache.positions.new_zeros(cache.batch_size, pad), cache.positions], 1)
                cache.filled = width
            if cache.forgotten + pad > forgotten:
                _pad_front([cache.kv.layers[i] for i in cache.forgetting], cache.forgotten + pad - forgotten)
            cache.forgotten = forgotten
        for mine, theirs in zip(self.kv.layers, other.kv.layers, strict=True):
            mine.keys = torch.cat([mine.keys, theirs.keys])
            mine.values = torch.cat([mine.values, theirs.values])
        self.valid = torch.cat([self.valid, other.valid])
        if self.positions is not None:
            self.positions = torch.cat([self.positions, other.positions])

    def select_rows(self, rows: torch.Tensor) -> None:
        """Keep only ``rows`` (finished rows stop costing memory and compute)."""
        if self.static:
            for layer in self.kv.layers:
                if getattr(layer, "is_initialized", False):
                    layer.keys, layer.values = layer.keys[rows], layer.values[rows]
                    layer.batch_size = layer.keys.shape[0]
        else:
            self.kv.batch_select_indices(rows)
        self.valid = self.valid[rows]
        if self.positions is not None:
            self.positions = self.positions[rows]

    def reject_last(self, row: int, count: int) -> None:
        """Mark the last ``count`` slots of row ``row`` invalid (its rejected drafts; they stay until cropped or
        compacted)."""
        if count > 0:
            self.valid[row, self.filled - count:] = False

    def drop_last(self, n: int) -> None:
        """Remove the last ``n`` slots of every row (rejected speculative positions); dynamic cache only."""
        if n <= 0:
            return
        if self.static or n > self.filled:
            raise HamburgerError(f"cannot drop {n} of {self.filled} slots from this cache")
        self.kv.crop(-n)
        self.valid = self.valid[:, :-n]
        if self.positions is not None:
            self.positions = self.positions[:, :-n]
        self.filled -= n

    def plain(self) -> bool:
        """Whether the cache is a plain dynamic one of whole slots: `SpareSlotsLayer`s, every slot in every layer (no
        sliding window), no store of its own (as `full_heads.FullHeadCache` has): what `drop_first` and `joined`
        take."""
        return (type(self) is SlotCache and not self.static and self.positions is None
                and all(isinstance(layer, SpareSlotsLayer) for layer in self.kv.layers))

    def drop_first(self, n: int) -> None:
        """Remove the first ``n`` slots of every row, their memory too (a `plain` cache only)."""
        if not self.plain() or not 0 <= n <= self.filled:
            raise HamburgerError(f"cannot drop the first {n} of {self.filled} slots from this cache")
        for layer in self.kv.layers:
            if layer.is_initialized:
                layer.keys, layer.values = layer.keys[..., n:, :].clone(), layer.values[..., n:, :].clone()
        self.valid = self.valid[:, n:]
        self.filled -= n

    def compact_if_holey(self) -> None:
        """`compact` once more than `COMPACT_AT` of the slots are holes (invalid: padding, rejected or re-read)."""
        if not self.static and int((~self.valid).sum()) > COMPACT_AT * self.valid.numel():
            self.compact()

    def compact(self) -> None:
        """Squeeze out invalid slots: each row keeps its valid entries in order, left-padded to the longest row.
        Keys and values are gathered, so a row's attention sees exactly what it saw before."""
        if self.static:
            raise HamburgerError("a static KV cache cannot be compacted")
        width = int(self.valid.sum(1).max()) if self.batch_size else 0
        if width == self.filled:
            return
        # A stable sort puts each row's invalid slots first and its valid ones after, both in slot order.
        index = torch.sort(self.valid.to(torch.int8), dim=1, stable=True).indices[:, self.filled - width:]
        # the forgetting layers hold the slots from `forgotten` on: they forget the new slots that only old forgotten
        # ones fill (each row's slots stay in order), and read the others from where they hold them
        forgotten = int((index.amax(0) < self.forgotten).sum()) if self.forgetting else 0
        held = (index[:, forgotten:] - self.forgotten).clamp(min=0) if self.forgetting else index
        for i, layer in enumerate(self.kv.layers):
            at = held if i in self.forgetting else index
            for name in ("keys", "values"):
                t = getattr(layer, name)
                setattr(layer, name, t.gather(2, at[:, None, :, None].expand(-1, t.shape[1], -1, t.shape[3])))
        self.forgotten = forgotten
        self.valid = self.valid.gather(1, index)
        if self.positions is not None:
            self.positions = self.positions.gather(1, index)
        self.filled = width


def rows_copy(cache: SlotCache, rows: list[int]) -> SlotCache:
    """A cache of its own holding ``rows`` of the dynamic ``cache``, which stays as it was: its bookkeeping copied, and
    the tensors `select_rows` indexes (every row's keys, values, masks, positions, stores) copied with those rows. The
    few it does not index (a rotation, the full heads' splits) and the base's config are shared: nothing writes them."""
    if cache.static:
        raise HamburgerError("a static KV cache cannot be copied by rows")
    shared: dict[int, object] = {}
    _share_leaves(cache, shared, set())
    part = copy.deepcopy(cache, shared)
    part.select_rows(torch.tensor(rows, dtype=torch.long, device=cache.valid.device))
    return part


def joined(parts: list[tuple[SlotCache, int]]) -> SlotCache:
    """A cache of its own holding the first ``n`` slots of each ``(cache, n)`` of ``parts`` (`SlotCache.plain` ones with
    as many rows), one after the other: a text's cache, then those of what read on from it."""
    first = parts[0][0]
    if not all(cache.plain() and cache.batch_size == first.batch_size and 0 <= n <= cache.filled
               for cache, n in parts):
        raise HamburgerError("only plain caches with as many rows can be joined, each cut within its slots")
    shared: dict[int, object] = {}
    _share_leaves(first, shared, set())
    out = copy.deepcopy(first, shared)  # (its bookkeeping; every tensor is replaced below)
    for i, layer in enumerate(out.kv.layers):
        if layer.is_initialized:
            layer.keys = torch.cat([cache.kv.layers[i].keys[..., :n, :] for cache, n in parts], -2)
            layer.values = torch.cat([cache.kv.layers[i].values[..., :n, :] for cache, n in parts], -2)
    out.valid = torch.cat([cache.valid[:, :n] for cache, n in parts], 1)
    out.filled = sum(n for _, n in parts)
    return out


def _share_leaves(x, shared: dict[int, object], seen: set[int]) -> None:
    """Map every tensor and config reachable from ``x`` to itself in ``shared`` (a `copy.deepcopy` memo)."""
    if id(x) in seen:
        return
    seen.add(id(x))
    if isinstance(x, (torch.Tensor, PretrainedConfig)):
        shared[id(x)] = x
    elif isinstance(x, (list, tuple, set)):
        for y in x:
            _share_leaves(y, shared, seen)
    elif isinstance(x, dict):
        for y in x.values():
            _share_leaves(y, shared, seen)
    elif hasattr(x, "__dict__") and not isinstance(x, type):  # (an object's state; a class deep-copies as itself)
        _share_leaves(vars(x), shared, seen)
