"""The `gc:` block of flytelite's configuration: how long finished executions, their data and the audit trail
are kept (flytelite/retention.py, `flytelite gc`), and the durations it is written in."""

from __future__ import annotations

import re
from dataclasses import dataclass

_DURATION_UNITS = {"s": 1, "m": 60, "h": 3600, "d": 86400, "w": 7 * 86400}


def parse_duration(text: str) -> float:
    """Seconds in a duration such as `30d`, `12h`, `90m`, `45s`, `2w` or `1d12h`; ValueError otherwise."""
    match = re.fullmatch(r"(?:\d+(?:\.\d+)?[smhdw])+", text.strip())
    if not match:
        raise ValueError(f"{text!r} is not a duration: write a number and a unit (s, m, h, d, w), e.g. 30d or 12h")
    return sum(float(n) * _DURATION_UNITS[u] for n, u in re.findall(r"(\d+(?:\.\d+)?)([smhdw])", text))


@dataclass
class GcConfig:
    """Retention (`flytelite gc`): finished executions older than `older_than` go, with their data, logs and
    cache entries. Empty: the server never collects by itself (`flytelite gc --older-than` still does)."""

    # Finished executions older than this (a duration: 30d, 12h) are collected; empty: the server never
    # collects by itself.
    older_than: str = ""
    # Seconds between two collections inside the server (one replica collects: the "gc" leader).
    interval_seconds: float = 86400.0
    # Audit trail events (admin/audit.py) older than this go at each collection; empty: `older_than`'s age.
    audit_older_than: str = ""

    def __post_init__(self) -> None:
        for value in (self.older_than, self.audit_older_than):
            if value:
                parse_duration(value)
        if self.interval_seconds <= 0:
            raise ValueError(f"gc.interval_seconds must be more than 0, not {self.interval_seconds}")
