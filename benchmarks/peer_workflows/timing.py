"""What both peer scripts share: time the two workflows, check their results, print the timings as JSON.

Runs inside a peer's own venv (no flytelite, no flytekit there): only the standard library. Linux only
(it reads /proc, as the other benchmarks do).
"""

from __future__ import annotations

import json
import os
import sys
import time
from collections.abc import Callable
from pathlib import Path

CHAIN = 100
FAN_OUT = 1000
QUIET_CPU = 0.05  # CPU seconds per second below which the peer counts as idle
SETTLE_LIMIT = 300.0


def _cpu_seconds() -> float:
    """CPU time (user + system) of this process and its children (Prefect's temporary server)."""
    me = os.getpid()
    total = 0.0
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue  # the process ended meanwhile
        pid = int(stat.parent.name)
        if pid == me or int(fields[1]) == me:
            total += int(fields[11]) + int(fields[12])
    return total / os.sysconf("SC_CLK_TCK")


def settle() -> float:
    """Wait until the peer is idle (e.g. Prefect's server done recording the last run's events); the wait."""
    started = time.perf_counter()
    before = _cpu_seconds()
    while time.perf_counter() - started < SETTLE_LIMIT:
        time.sleep(1.0)
        now = _cpu_seconds()
        if now - before < QUIET_CPU:
            break
        before = now
    return time.perf_counter() - started


def _run(workflow: Callable[[], object], expected: object, what: str) -> float:
    started = time.perf_counter()
    got = workflow()
    seconds = time.perf_counter() - started
    if got != expected:
        # A broken run must never report a time.
        raise SystemExit(f"{what} returned {str(got)[:200]!r}, expected {str(expected)[:200]!r}")
    return seconds


def report(version: str, chain: Callable[[], object], fan_out: Callable[[], object]) -> None:
    """Each workflow once as a warm-up (not counted), then `runs` (argv[1]) timed runs of it; JSON on stdout.

    Before every run the peer is left to finish what the previous run left behind (not timed): the time
    is one workflow's, from the call until its checked result, not a backlog of the one before.
    """
    runs = int(sys.argv[1]) if len(sys.argv) > 1 else 3
    result: dict[str, object] = {"version": version, "runs": runs}
    settled = []
    for name, workflow, expected in (("chain", chain, CHAIN),
                                     ("fan_out", fan_out, [x + 1 for x in range(FAN_OUT)])):
        result[f"{name}_warm_up"] = _run(workflow, expected, name)
        times = []
        for _ in range(runs):
            settled.append(settle())
            times.append(_run(workflow, expected, name))
        result[name] = times
        print(f"{name}: {times}", file=sys.stderr, flush=True)
    result["settle_seconds"] = settled
    print(json.dumps(result))
