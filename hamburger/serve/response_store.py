"""The responses a server keeps (the Responses API's `store`, on by default as OpenAI's): each response object with
the conversation that led to it and its answer, as chat messages, so that a request may go on from it
(`previous_response_id`) and `GET /v1/responses/{id}` returns it. In memory, for the server's life: the least recently
used go once the kept JSON passes `max_bytes`."""

from __future__ import annotations

import json
import threading
from collections import OrderedDict

STORE_BYTES = 64 * 2 ** 20  # the responses and conversations kept, as JSON text


class ResponseStore:
    """Kept responses by id; safe to use from several threads (requests are read in a worker pool)."""

    def __init__(self, max_bytes: int = STORE_BYTES):
        self.max_bytes, self.bytes = max_bytes, 0
        self._items: OrderedDict[str, tuple[dict, list[dict], int]] = OrderedDict()
        self._lock = threading.Lock()

    def add(self, response: dict, conversation: list[dict]) -> None:
        """Keep ``response`` with ``conversation``: the chat messages that led to it and its answer (not its
        instructions, which a request that goes on from it does not inherit)."""
        size = len(json.dumps(response)) + len(json.dumps(conversation))
        with self._lock:
            self._drop(response["id"])
            self._items[response["id"]] = (response, conversation, size)
            self.bytes += size
            while self.bytes > self.max_bytes and self._items:
                self._drop(next(iter(self._items)))

    def get(self, rid: str) -> tuple[dict, list[dict]] | None:
        """(the response, its conversation), or None where none is kept under ``rid``."""
        with self._lock:
            if rid not in self._items:
                return None
            self._items.move_to_end(rid)
            response, conversation, _ = self._items[rid]
            return response, conversation

    def delete(self, rid: str) -> bool:
        with self._lock:
            return self._drop(rid)

    def _drop(self, rid: str) -> bool:
        item = self._items.pop(rid, None)
        if item is not None:
            self.bytes -= item[2]
        return item is not None

    def __len__(self) -> int:
        return len(self._items)
