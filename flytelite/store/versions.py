"""What was read of things that never change once they exist, kept: entity versions, projects.

Registering a version twice with another spec is refused and nothing deletes a version or a project, so a
value derived from a version's rows alone (never from mutable columns such as a launch plan's state or a
project's) stays right for the life of the database, on every replica. Bounded, least recently used first out.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable, Hashable
from typing import Any, TypeVar

T = TypeVar("T")

MAX_ENTRIES = 256


class VersionCache:
    def __init__(self, max_entries: int = MAX_ENTRIES):
        self._max = max_entries
        self._lock = threading.Lock()
        self._values: OrderedDict[Hashable, Any] = OrderedDict()

    def get(self, key: Hashable, load: Callable[[], T]) -> T:
        """The value kept under `key`, or `load()` kept from now on (a load that raises keeps nothing)."""
        with self._lock:
            if key in self._values:
                self._values.move_to_end(key)
                return self._values[key]
        value = load()
        with self._lock:
            self._values[key] = value
            if len(self._values) > self._max:
                self._values.popitem(last=False)
        return value
