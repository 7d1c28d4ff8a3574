"""Spacing out an array node's progress events: item changes wait in ArrayState.pending until the next one.

Admin keeps every item of an array node in its one task execution, so each event costs it work in
proportion to the number of items: a large array reports at most once per REPORT_SECONDS while
running (small ones every round). A terminal event always carries whatever is still pending.
"""

from __future__ import annotations

import base64

from flyteidl.event import event_pb2

from flytelite.propeller.nodes.array.state import ArrayState

REPORT_SECONDS = 1.0
# Arrays up to this size report every change at once.
SMALL_ARRAY = 100


def hold(state: ArrayState, changed: list[event_pb2.ExternalResourceInfo]) -> None:
    """Keep these item changes for the next event (a later change of an item attempt wins, its logs stay)."""
    for info in changed:
        key = f"{info.index}:{info.retry_attempt}"
        held = state.pending.get(key)
        if held is not None:
            earlier = _decode(held)
            if not len(info.logs):
                info.logs.extend(earlier.logs)
            if not info.external_id:
                info.external_id = earlier.external_id
            if not info.cache_status:
                info.cache_status = earlier.cache_status
        state.pending[key] = base64.b64encode(info.SerializeToString()).decode("ascii")


def release(state: ArrayState) -> list[event_pb2.ExternalResourceInfo]:
    """Everything pending, in item order; nothing is pending afterwards."""
    infos = sorted((_decode(v) for v in state.pending.values()), key=lambda r: (r.index, r.retry_attempt))
    state.pending.clear()
    return infos


def seconds_until_due(state: ArrayState, now: float) -> float:
    """How long pending changes may wait before the next progress event (0: send now)."""
    if state.size <= SMALL_ARRAY:
        return 0.0
    return max(0.0, state.reported_at + REPORT_SECONDS - now)


def _decode(text: str) -> event_pb2.ExternalResourceInfo:
    return event_pb2.ExternalResourceInfo.FromString(base64.b64decode(text))
