"""The persisted sub-status of an array node, small enough for 10,000 items (FlytePropeller's ArrayNodeState).

Each item's NodeStatusPhase is one character of a string; attempt numbers are kept only for items past
their first attempt; a full NodeStatus (plugin state: pid, paths) only for the items in flight.
Counts are updated as items finish, so a round looks at the items in flight and the next ones to
start, never at all 10,000. It lives in NodeStatus.array as a dict that the workflow status's JSON
encoding writes (its running items as NodeStatus objects).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import IntEnum
from typing import Any

from flytelite.propeller.phases import NODE_FAILED, NODE_PASSED, NodeStatusPhase
from flytelite.propeller.status import NodeStatus

# One character per NodeStatusPhase (0..12), in order.
_PHASE_CHARS = "0123456789abc"
_CHAR_PHASE = {ord(c): NodeStatusPhase(i) for i, c in enumerate(_PHASE_CHARS)}
# Distinct item error messages kept for the node's failure message.
MAX_ERROR_MESSAGES = 20
# Items listed per message.
MAX_ERROR_INDICES = 50


class ArrayPhase(IntEnum):
    """FlytePropeller's ArrayNodePhase, plus the terminal phases after which nothing is reported."""

    NONE = 0
    EXECUTING = 1
    FAILING = 2
    SUCCEEDING = 3
    SUCCEEDED = 4
    FAILED = 5
    ABORTED = 6


ARRAY_DONE = frozenset({ArrayPhase.SUCCEEDED, ArrayPhase.FAILED, ArrayPhase.ABORTED})


@dataclass
class ArrayState:
    phase: int = ArrayPhase.NONE
    size: int = 0
    # Item i's NodeStatusPhase is _PHASE_CHARS[items[i]].
    items: bytearray = field(default_factory=bytearray)
    # Current attempt of items past attempt 0 (keys are item indices).
    attempts: dict[int, int] = field(default_factory=dict)
    # Items started and not finished, with their full status.
    running: dict[int, NodeStatus] = field(default_factory=dict)
    # Items start in index order: those below next_item have started.
    next_item: int = 0
    succeeded: int = 0
    failed: int = 0
    # Version of the array's RUNNING TaskExecutionEvent (bumped whenever an item changed).
    phase_version: int = 0
    # Item error message -> the first items that failed with it.
    errors: dict[str, list[int]] = field(default_factory=dict)
    # Items that failed beyond what `errors` lists.
    unlisted_errors: int = 0
    # Item changes not reported to admin yet (progress events are spaced out for large arrays), as
    # base64 of serialized ExternalResourceInfo by "index:attempt"; and when the last event was sent.
    pending: dict[str, str] = field(default_factory=dict)
    reported_at: float = 0.0

    @classmethod
    def start(cls, size: int) -> ArrayState:
        return cls(phase=ArrayPhase.EXECUTING, size=size, items=bytearray(b"0" * size))

    def item_phase(self, index: int) -> NodeStatusPhase:
        return _CHAR_PHASE[self.items[index]]

    def set_item_phase(self, index: int, phase: int) -> None:
        self.items[index] = ord(_PHASE_CHARS[phase])

    def attempt(self, index: int) -> int:
        running = self.running.get(index)
        return running.attempts if running is not None else self.attempts.get(index, 0)

    @property
    def done_items(self) -> int:
        return self.succeeded + self.failed

    def finish(self, index: int, status: NodeStatus) -> None:
        """Record a terminal item: counted once, its full status dropped."""
        self.running.pop(index, None)
        if status.attempts:
            self.attempts[index] = status.attempts
        if status.phase in NODE_PASSED:
            self.succeeded += 1
        elif status.phase in NODE_FAILED:
            self.failed += 1
            message = status.error.message if status.error is not None else status.message or "unknown error"
            self._collect_error(index, message)
        self.set_item_phase(index, status.phase)

    def _collect_error(self, index: int, message: str) -> None:
        indices = self.errors.get(message)
        if indices is None and len(self.errors) < MAX_ERROR_MESSAGES:
            indices = self.errors[message] = []
        if indices is None or len(indices) >= MAX_ERROR_INDICES:
            self.unlisted_errors += 1
            return
        indices.append(index)

    def error_summary(self) -> str:
        """Item errors grouped by message, as FlytePropeller's error collector summarises them."""
        lines = [f"[{_ranges(indices)}]: {message}" for message, indices in self.errors.items()]
        if self.unlisted_errors:
            lines.append(f"... and {self.unlisted_errors} more failed items")
        return "\n".join(lines)

    # -- persistence ------------------------------------------------------------------------
    def to_dict(self) -> dict[str, Any]:
        """The state for NodeStatus.array. The running items' NodeStatus objects go in as they are (the
        workflow status's JSON encoding takes dataclasses), not copied into dicts on every round."""
        return {
            "phase": int(self.phase), "size": self.size, "items": self.items.decode("ascii"),
            "attempts": {str(k): v for k, v in self.attempts.items()},
            "running": {str(k): v for k, v in self.running.items()},
            "next_item": self.next_item, "succeeded": self.succeeded, "failed": self.failed,
            "phase_version": self.phase_version, "errors": self.errors, "unlisted_errors": self.unlisted_errors,
            "pending": self.pending, "reported_at": self.reported_at,
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any] | None) -> ArrayState:
        if not data:
            return cls()
        return cls(
            phase=ArrayPhase(data.get("phase", 0)), size=data.get("size", 0),
            items=bytearray(data.get("items", "").encode("ascii")),
            attempts={int(k): v for k, v in (data.get("attempts") or {}).items()},
            running={int(k): v if isinstance(v, NodeStatus) else NodeStatus.from_dict(v)
                     for k, v in (data.get("running") or {}).items()},
            next_item=data.get("next_item", 0), succeeded=data.get("succeeded", 0), failed=data.get("failed", 0),
            phase_version=data.get("phase_version", 0), errors=dict(data.get("errors") or {}),
            unlisted_errors=data.get("unlisted_errors", 0), pending=dict(data.get("pending") or {}),
            reported_at=data.get("reported_at", 0.0),
        )


def _ranges(indices: list[int]) -> str:
    """[0, 1, 2, 5] -> "0-2,5"."""
    parts: list[str] = []
    start = prev = None
    for i in sorted(indices):
        if prev is not None and i == prev + 1:
            prev = i
            continue
        if start is not None:
            parts.append(str(start) if start == prev else f"{start}-{prev}")
        start = prev = i
    if start is not None:
        parts.append(str(start) if start == prev else f"{start}-{prev}")
    return ",".join(parts)
