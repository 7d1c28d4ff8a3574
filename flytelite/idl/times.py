"""Timestamps and durations between datetime and protobuf (pure), and the injectable clock."""

from __future__ import annotations

import time
from datetime import datetime, timedelta, timezone

from google.protobuf import duration_pb2, timestamp_pb2


def utcnow() -> datetime:
    return datetime.now(timezone.utc)


def to_timestamp(dt: datetime | None) -> timestamp_pb2.Timestamp:
    ts = timestamp_pb2.Timestamp()
    if dt is not None:
        if dt.tzinfo is None:
            dt = dt.replace(tzinfo=timezone.utc)
        ts.FromDatetime(dt)
    return ts


def from_timestamp(ts: timestamp_pb2.Timestamp) -> datetime:
    return ts.ToDatetime(tzinfo=timezone.utc)


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
