"""A least-recently-used cache bounded by the sizes of its values (the engine's: in nodes), not by their count."""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Hashable
from typing import Generic, TypeVar

_K = TypeVar("_K", bound=Hashable)
_V = TypeVar("_V")


class SizedCache(Generic[_K, _V]):
    """Values by key, at most `max_size` in all by the sizes they were put with (the last one put is kept whatever
    its size); the least recently used go first. Thread-safe."""

    def __init__(self, max_size: int):
        self.max_size = max_size
        self._entries: OrderedDict[_K, tuple[_V, int]] = OrderedDict()
        self._size = 0
        self._lock = threading.Lock()

    def get(self, key: _K) -> _V | None:
        with self._lock:
            found = self._entries.get(key)
            if found is None:
                return None
            self._entries.move_to_end(key)
            return found[0]

    def pop(self, key: _K) -> _V | None:
        with self._lock:
            return self._pop(key)

    def put(self, key: _K, value: _V, size: int) -> None:
        with self._lock:
            self._pop(key)
            self._entries[key] = (value, size)
            self._size += size
            while self._size > self.max_size and len(self._entries) > 1:
                self._pop(next(iter(self._entries)))

    def _pop(self, key: _K) -> _V | None:
        found = self._entries.pop(key, None)
        if found is None:
            return None
        self._size -= found[1]
        return found[0]
