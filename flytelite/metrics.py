"""Prometheus metrics, served at GET /metrics in Prometheus's text format.

Names follow Flyte's where Flyte has one: FlyteAdmin's per-RPC metrics under `flyte:admin:<service>:<rpc>:`
(`duration_ms`, `success`, `errors`, `codes:<CODE>`), its execution manager's under
`flyte:admin:admin:execution_manager:`, FlytePropeller's round metrics under `flyte:propeller:all:`.
flytelite's own are under `flytelite:`. Counters keep Flyte's names as its Go client writes them (no `_total`
suffix); summaries have a `_sum` and a `_count`.

Recording is a dictionary update under a lock; what a scrape reads of the server's state (queue depth, task
slots, active executions) is read by gauges when the scrape asks.
"""

from __future__ import annotations

import re
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager

ADMIN = "flyte:admin:"
EXECUTION_MANAGER = "flyte:admin:admin:execution_manager:"
PROPELLER = "flyte:propeller:all:"
OWN = "flytelite:"
CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"

Labels = tuple[tuple[str, str], ...]


def _snake(name: str) -> str:
    """CreateExecution -> create_execution."""
    return re.sub(r"(?<!^)(?=[A-Z])", "_", name).lower()


def rpc_prefix(method: str) -> str:
    """The metric prefix of a gRPC method, as FlyteAdmin scopes it:
    /flyteidl.service.AdminService/CreateExecution -> flyte:admin:admin:create_execution:."""
    service, _, rpc = method.lstrip("/").partition("/")
    short = service.rsplit(".", 1)[-1].removesuffix("Service")
    return f"{ADMIN}{_snake(short)}:{_snake(rpc)}:"


class Metrics:
    """The server's metrics: counters and summaries it records, gauges read at scrape time."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._counters: dict[tuple[str, Labels], float] = {}
        self._summaries: dict[str, list[float]] = {}  # name -> [count, sum]
        # Read at scrape time: name -> (read, kind), kind "gauge" or "counter" (a count kept elsewhere).
        self._gauges: dict[str, tuple[Callable[[], float], str]] = {}
        self._help: dict[str, str] = {}

    # -- recording ------------------------------------------------------------------------------
    def inc(self, name: str, doc: str, value: float = 1.0, /, **labels: str) -> None:
        key = (name, tuple(sorted(labels.items())))
        with self._lock:
            self._counters[key] = self._counters.get(key, 0.0) + value
            self._help.setdefault(name, doc)

    def counter(self, name: str, /, **labels: str) -> float:
        """A counter's value (0 before its first increment)."""
        with self._lock:
            return self._counters.get((name, tuple(sorted(labels.items()))), 0.0)

    def observe(self, name: str, doc: str, value: float) -> None:
        with self._lock:
            summary = self._summaries.get(name)
            if summary is None:
                summary = self._summaries[name] = [0.0, 0.0]
                self._help[name] = doc
            summary[0] += 1
            summary[1] += value

    @contextmanager
    def timer_ms(self, name: str, doc: str) -> Iterator[None]:
        """Observe how long the block took, in milliseconds (Flyte's stopwatches)."""
        start = time.perf_counter()
        try:
            yield
        finally:
            self.observe(name, doc, (time.perf_counter() - start) * 1000.0)

    def record_rpc(self, prefix: str, code: str, elapsed_ms: float) -> None:
        """One answered call of an RPC (over gRPC or REST) as FlyteAdmin's RequestMetrics count it; `code` is
        the gRPC status code's name."""
        self.observe(f"{prefix}duration_ms", "recorded response time duration for endpoint", elapsed_ms)
        if code == "OK":
            self.inc(f"{prefix}success", "count of successful responses returned by endpoint")
        else:
            self.inc(f"{prefix}errors", "count of errors returned by endpoint")
        self.inc(f"{prefix}codes:{code}", f"count of responses returning: {code}")

    def gauge(self, name: str, doc: str, read: Callable[[], float], kind: str = "gauge") -> None:
        """A gauge (or, with kind "counter", a count kept elsewhere) whose value `read()` gives at each scrape,
        replacing one of the same name."""
        with self._lock:
            self._gauges[name] = (read, kind)
            self._help[name] = doc

    # -- scraping -------------------------------------------------------------------------------
    def exposition(self) -> bytes:
        """Every metric in Prometheus's text format (version 0.0.4), as Flyte's Go client writes them."""
        with self._lock:
            counters = dict(self._counters)
            summaries = {name: tuple(v) for name, v in self._summaries.items()}
            gauges = dict(self._gauges)
            docs = dict(self._help)
        lines: list[str] = []

        def family(name: str, kind: str) -> None:
            lines.append(f"# HELP {name} {_escape_help(docs.get(name, name))}")
            lines.append(f"# TYPE {name} {kind}")

        last = None
        for (name, labels), value in sorted(counters.items()):
            if name != last:
                family(name, "counter")
                last = name
            lines.append(f"{name}{_labels(labels)} {_number(value)}")
        for name, (count, total) in sorted(summaries.items()):
            family(name, "summary")
            lines += [f"{name}_sum {_number(total)}", f"{name}_count {_number(count)}"]
        for name, (read, kind) in sorted(gauges.items()):
            try:
                value = float(read())
            except Exception:  # noqa: BLE001 - a gauge that cannot be read now is left out of this scrape
                continue
            family(name, kind)
            lines.append(f"{name} {_number(value)}")
        return ("\n".join(lines) + "\n").encode()


def _labels(labels: Labels) -> str:
    if not labels:
        return ""
    escaped = (value.replace("\\", "\\\\").replace("\n", "\\n").replace('"', '\\"') for _, value in labels)
    return "{" + ",".join(f'{key}="{value}"' for (key, _), value in zip(labels, escaped, strict=True)) + "}"


def _escape_help(text: str) -> str:
    return text.replace("\\", "\\\\").replace("\n", "\\n")


def _number(value: float) -> str:
    return repr(float(value))
