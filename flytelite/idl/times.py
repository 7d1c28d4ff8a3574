"""Timestamps and durations between datetime and protobuf (pure), and the injectable clock."""

from __future__ import annotations

import time
from datetime import datetime, timedelta, timezone

from google.protobuf import duration_pb2, timestamp_pb2


def utcnow() -> datetime:
    return datetime.now(timezone.utc)


_EPOCH = datetime(1970, 1, 1, tzinfo=timezone.utc)


# Plain arithmetic, as protobuf's FromDatetime/ToDatetime compute it but several times faster: the engine
# stamps every event, and admin reads every event's time.
def to_timestamp(dt: datetime | None) -> timestamp_pb2.Timestamp:
    if dt is None:
        return timestamp_pb2.Timestamp()
    if dt.tzinfo is None:
        dt = dt.replace(tzinfo=timezone.utc)
    delta = dt - _EPOCH
    return timestamp_pb2.Timestamp(seconds=delta.days * 86400 + delta.seconds, nanos=delta.microseconds * 1000)


def from_timestamp(ts: timestamp_pb2.Timestamp) -> datetime:
    return _EPOCH + timedelta(seconds=ts.seconds, microseconds=ts.nanos // 1000)


def to_duration(delta: timedelta | float) -> duration_pb2.Duration:
    d = duration_pb2.Duration()
    d.FromTimedelta(delta if isinstance(delta, timedelta) else timedelta(seconds=delta))
    return d


class Clock:
    """One clock for the whole server; tests substitute one that moves on demand."""

    def now(self) -> datetime:
        return utcnow()

    def monotonic(self) -> float:
        return time.monotonic()
