"""N-gram drafts: how the base itself went on after the text's last few tokens, counted over answers it wrote.

Prompt lookup (`engine/lookup.py`) drafts only what the text at hand already holds. Much of an answer is the base's
own stock phrasing instead ("Here are some", "I hope this helps", "= $", "So, the answer is"), which recurs across
answers. `NgramDrafts` keeps, for each context of ``order`` tokens seen at least ``min_count`` times in a corpus of
the base's own answers (e.g. the distilled training data, `data/distill.py`), the token that followed it there, when
that token followed it at least ``min_share`` of the time. A proposal extends the text by those tokens, longest
context first, while one is known. It costs no forward, and the base verifies every draft as it does the MSD's, so
the output stays the base's. Verify mode drafts from it for greedy rows only: sampled answers leave the base's greedy
phrasing, and there the MSD's drafts, drawn from its own distribution, were kept more often. (The idea of drafting
from a datastore is REST's, He et al. 2023; this keeps only the confident continuations, a table of a few MB.)

Saved as safetensors: per order, the sorted context keys (a context's tokens as digits in base ``vocab_size``, so
``vocab_size ** order`` must fit in 63 bits) and the next tokens.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Iterable

import torch

from hamburger.errors import HamburgerError

NGRAM_FILE = "draft_ngrams.safetensors"  # beside a checkpoint's weights: loaded as `HamburgerModel.draft_ngrams`
NGRAM_TOKENS = 10  # most tokens one proposal drafts (as prompt lookup's default)


@dataclass
class NgramDrafts:
    """Confident continuations by context order: ``tables[n]`` maps a context of n tokens (its key) to a next token."""

    vocab_size: int
    tables: dict[int, dict[int, int]] = field(default_factory=dict)
    tokens: int = NGRAM_TOKENS  # most tokens one proposal drafts

    def __post_init__(self):
        for n in self.tables:
            if n < 1 or self.vocab_size ** n >= 1 << 63:
                raise HamburgerError(f"n-gram contexts of {n} tokens of a {self.vocab_size}-token vocabulary do not "
                                     f"fit a 63-bit key")
        self.orders = sorted(self.tables, reverse=True)  # longest context first

    @classmethod
    def count(cls, sequences: Iterable[list[int]], vocab_size: int, orders: tuple[int, ...] = (3, 2),
              min_count: int = 3, min_share: float = 0.6, tokens: int = NGRAM_TOKENS) -> "NgramDrafts":
        """The confident continuations of every context of each order in ``sequences`` (token id lists)."""
        if min_count < 1 or not 0 < min_share <= 1:
            raise HamburgerError(f"n-gram drafts need min_count >= 1 and min_share in (0, 1], got {min_count} and "
                                 f"{min_share}")
        counts: dict[int, defaultdict[int, Counter]] = {n: defaultdict(Counter) for n in orders}
        for ids in sequences:
            for n in orders:
                table = counts[n]
                for i in range(n, len(ids)):
                    table[_key(ids[i - n:i], vocab_size)][ids[i]] += 1
        tables = {}
        for n, table in counts.items():
            tables[n] = {}
            for key, following in table.items():
                total = sum(following.values())
                token, times = following.most_common(1)[0]
                if total >= min_count and times >= min_share * total:
                    tables[n][key] = token
        return cls(vocab_size, tables, tokens)

    def propose(self, history: list[int], limit: int) -> list[int]:
        """Up to ``min(tokens, limit)`` tokens: each the confident continuation of the longest known context of the
        text so far (``history`` and the tokens proposed before it); [] when the first has none."""
        out: list[int] = []
        text = list(history[-max(self.orders, default=0):])
        while len(out) < min(self.tokens, limit):
            for n in self.orders:
                if len(text) >= n and (token := self.tables[n].get(_key(text[-n:], self.vocab_size))) is not None:
                    break
            else:
                break
            out.append(token)
            text.append(token)
        return out

    def drafting(self, tokens: int | None) -> "NgramDrafts | None":
        """This table proposing up to ``tokens`` tokens (None: its own `tokens`; 0: no table, None)."""
        if tokens is not None and tokens < 0:
            raise HamburgerError(f"n-gram drafts must be >= 0 tokens (0: none), got {tokens}")
        return self if tokens is None else replace(self, tokens=tokens) if tokens else None

    def __len__(self) -> int:
        return sum(map(len, self.tables.values()))

    def save(self, path: str | Path) -> None:
        from safetensors.torch import save_file

        tensors = {}
        for n, table in self.tables.items():
            keys = sorted(table)
            tensors[f"keys_{n}"] = torch.tensor(keys, dtype=torch.int64)
            tensors[f"next_{n}"] = torch.tensor([table[k] for k in keys], dtype=torch.int32)
        save_file(tensors, str(path), metadata={"vocab_size": str(self.vocab_size), "tokens": str(self.tokens)})

    @classmethod
    def load(cls, path: str | Path) -> "NgramDrafts":
        from safetensors import SafetensorError, safe_open

        try:
            with safe_open(str(path), framework="pt") as f:
                meta = f.metadata() or {}
                tensors = {name: f.get_tensor(name) for name in f.keys()}
            vocab_size, tokens = int(meta["vocab_size"]), int(meta.get("tokens", NGRAM_TOKENS))
            orders = sorted(int(name.split("_")[1]) for name in tensors if name.startswith("keys_"))
            tables = {n: dict(zip(tensors[f"keys_{n}"].tolist(), tensors[f"next_{n}"].tolist())) for n in orders}
        except (OSError, KeyError, ValueError, SafetensorError) as e:
            raise HamburgerError(f"{path}: not an n-gram draft table ({e})") from None
        return cls(vocab_size, tables, tokens)


def model_ngrams(model, tokens: int | None = None) -> NgramDrafts | None:
    """``model``'s n-gram table (`HamburgerModel.draft_ngrams`, a checkpoint's draft_ngrams.safetensors) proposing up to
    ``tokens`` tokens (None: the table's own count; 0: none); a model without a table drafts none, unless ``tokens``
    asks for some."""
    table = getattr(model, "draft_ngrams", None)
    if table is None:
        if tokens:
            raise HamburgerError(f"this checkpoint has no n-gram draft table ({NGRAM_FILE}; recipes/draft_ngrams.py "
                                 f"writes one)")
        return None
    return table.drafting(tokens)


def _key(context: list[int], vocab_size: int) -> int:
    key = 0
    for t in context:
        key = key * vocab_size + t
    return key
