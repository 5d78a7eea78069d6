"""Incremental detokenization: the text of a growing list of token ids, decoding a window at a time.

Decoding the whole answer again at every group costs O(answer) per group. `Detokenizer.update` decodes only a
window: a few committed tokens as left context (decoders that look at it, such as SentencePiece's leading
space, then see what the full decoding sees), then the tokens not committed yet; the text it adds is the
window's text past its committed head. Text is committed up to the last token once it ends in complete
characters (no U+FFFD of a multi-byte character still split over tokens). The result is exactly
`tokenizer.decode(ids, skip_special_tokens=True)`: where the window's head does not decode to what was
committed (a decoder that rewrites across token boundaries), everything is decoded once instead.
"""

from __future__ import annotations

CONTEXT = 4  # committed tokens decoded again as the window's left context


class Detokenizer:
    def __init__(self, tokenizer, skip_special_tokens: bool = True):
        self.tokenizer, self.skip = tokenizer, skip_special_tokens
        self.committed = ""  # the final text of ids[:read]
        self.read = 0  # tokens whose text is committed
        self.start = 0  # the window's first token
        self.kept = 0  # leading characters of the latest text that were already final before it

    def _decode(self, ids: list[int]) -> str:
        return self.tokenizer.decode(ids, skip_special_tokens=self.skip)

    def update(self, ids: list[int]) -> str:
        """The text of ``ids``: the ids of the previous call followed by new ones."""
        head, window = self._decode(ids[self.start:self.read]), self._decode(ids[self.start:])
        self.kept = len(self.committed)
        if not window.startswith(head):
            self.committed, self.read, self.start, self.kept = "", 0, 0, 0
            head, window = "", self._decode(ids)
        text = self.committed + window[len(head):]
        if not text.endswith("\ufffd"):
            self.committed, self.read = text, len(ids)
            self.start = max(0, self.read - CONTEXT)
        return text
