"""Answers about finished node and task executions, kept for a while.

A client watching an execution (FlyteRemote.wait, `pyflyte run --wait`) asks on every poll, for every node,
its data, its task executions and theirs: four calls per node, most of them about nodes that finished
long ago and can no longer change. Those answers are kept here (a lease of `seconds`, so that
the signed links in data answers stay valid, and so that data deleted by garbage collection stops showing)
and given again without the database or the blob store. Only what the handler says is finished is kept;
the API's interceptors (authentication among them) run before any handler, cached or not.
"""

from __future__ import annotations

import functools
import threading
import time
from collections import OrderedDict
from collections.abc import Callable
from typing import Any

from google.protobuf.message import Message

# Answers larger than this are not kept (a data answer may carry a large literal map inline).
MAX_ANSWER_BYTES = 1 << 20


class ReadCache:
    """Answers by (method, request), least recently used dropped past `max_bytes` in all."""

    def __init__(self, seconds: float = 30.0, max_bytes: int = 64 << 20, clock: Callable[[], float] = time.monotonic):
        self.seconds, self.max_bytes, self.clock = seconds, max_bytes, clock
        self._answers: OrderedDict[tuple[str, bytes], tuple[float, int, Message]] = OrderedDict()
        self._bytes = 0
        self._lock = threading.Lock()

    @staticmethod
    def key(method: str, request: Message) -> tuple[str, bytes]:
        return method, request.SerializeToString(deterministic=True)

    def get(self, key: tuple[str, bytes]) -> Message | None:
        with self._lock:
            kept = self._answers.get(key)
            if kept is None:
                return None
            if kept[0] <= self.clock():
                self._drop(key)
                return None
            self._answers.move_to_end(key)
            return kept[2]

    def put(self, key: tuple[str, bytes], answer: Message) -> None:
        """Keep the answer (which nobody may change from now on)."""
        size = answer.ByteSize()
        if size > MAX_ANSWER_BYTES:
            return
        with self._lock:
            if key in self._answers:
                self._drop(key)
            self._answers[key] = (self.clock() + self.seconds, size, answer)
            self._bytes += size
            while self._bytes > self.max_bytes:
                self._drop(next(iter(self._answers)))

    def _drop(self, key: tuple[str, bytes]) -> None:
        _, size, _ = self._answers.pop(key)
        self._bytes -= size


def kept_when_finished(read: Callable[[Any, Any, Any], tuple[Message, bool]]):
    """An API method from `read(self, request, context) -> (answer, finished)`: a finished answer is kept in
    `self.reads` and given again for the same request."""
    name = read.__name__

    @functools.wraps(read)
    def method(self, request, context=None):
        key = self.reads.key(name, request)
        answer = self.reads.get(key)
        if answer is None:
            answer, finished = read(self, request, context)
            if finished:
                self.reads.put(key, answer)
        return answer

    return method
