"""`make bench`: every benchmark row measured in one run, side by side; writes benchmarks/results/latest.md.

Sections (each row a median of several runs; slow baselines get fewer, the table says how many):
- engine only (benchmarks/engine_only.py): the real Engine, admin and EventSink in this process with
  the no-op plugin, a SQLite file and a blob folder: node transitions per second, a 1,000-node chain,
  a 10,000-item map task;
- 1,000 concurrent executions through a real server's gRPC API (benchmarks/concurrent.py), no-op plugin;
- real flytekit tasks through a real server, warm workers on and off (benchmarks/real_tasks.py).
Baselines: flytekit's local execution of the same workflows; flytelite with warm workers off.
Everything is written under one temporary folder, deleted only at the end (deleting files while
measuring would slow the disk under the next row).

    python -m benchmarks.run [--runs N] [--out PATH]
"""

from __future__ import annotations

import argparse
import os
import platform
import shutil
import sys
import tempfile
import time
from datetime import datetime, timezone
from pathlib import Path

import flytekit

from benchmarks.concurrent import concurrent_rows
from benchmarks.engine_only import engine_rows
from benchmarks.real_tasks import real_rows
from benchmarks.table import render

HERE = Path(__file__).parent


def machine() -> str:
    cpu = "unknown CPU"
    try:
        cpu = next(line.split(":", 1)[1].strip() for line in Path("/proc/cpuinfo").read_text().splitlines()
                   if line.startswith("model name"))
    except (OSError, StopIteration):
        pass
    return (f"{os.cpu_count()} cores ({cpu}), Python {platform.python_version()}, flytekit {flytekit.__version__}, "
            f"{platform.system()} {platform.release()}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=3, help="runs of each flytelite row (default 3)")
    parser.add_argument("--out", type=Path, default=HERE / "results" / "latest.md")
    args = parser.parse_args()
    started = time.monotonic()
    root = Path(tempfile.mkdtemp(prefix="flytelite-bench-"))
    try:
        rows = []
        for title, section in (("engine only", lambda: engine_rows(root, runs=args.runs, local_runs=3)),
                               ("concurrent executions", lambda: concurrent_rows(root, runs=args.runs, local_runs=1)),
                               ("real tasks", lambda: real_rows(root, runs=args.runs, local_runs=3))):
            print(f"benchmark: {title} ...", file=sys.stderr, flush=True)
            section_rows = section()
            rows += section_rows
            print(render(section_rows), file=sys.stderr, flush=True)
    finally:
        shutil.rmtree(root, ignore_errors=True)
    minutes = (time.monotonic() - started) / 60
    table = render(rows)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(
        "# flytelite benchmarks\n\n"
        f"`make bench` on {datetime.now(timezone.utc):%Y-%m-%d %H:%M} UTC, {machine()}; took {minutes:.1f} min. "
        "Medians; every row of one run was measured in the same `make bench`, one after another.\n\n"
        + table + "\n" + NOTES)
    print(table)


NOTES = """\
How each row is measured (see the modules in benchmarks/ for the code):
- *engine only*: admin, the engine and admin's EventSink in one process, tasks answered at once by the
  no-op plugin (flytelite/propeller/plugins/noop.py), a SQLite file and a blob folder on this machine's
  disk; timed from CreateExecution until admin applied the workflow's SUCCEEDED event. "home on tmpfs"
  is the same with flytelite's home in /dev/shm: the difference is what the disk costs.
- *concurrent executions*: a real `flytelite start` with `engine.plugin_override: noop`; 1,000
  CreateExecution calls sent at once over gRPC; timed until none is unfinished; each must succeed.
  Memory is the server's VmHWM from /proc.
- *real tasks*: a real `flytelite start`; workflows registered and first run with `pyflyte run --remote`,
  then run again with CreateExecution; times are the server's (execution created to SUCCEEDED). A task's
  run is its task execution's RUNNING to SUCCEEDED (process start until its exit was seen). With warm
  workers a map task's items run one after another in a few workers forked from the zygote (each item
  with its own environment, folder, log and a fresh import of the task's code).
- *flytekit local*: the same workflow function called in this Python process (flytekit's local execution).
"""


if __name__ == "__main__":
    main()
