"""`make bench`: every benchmark row measured in one run, side by side; writes benchmarks/results/latest.md.

Sections (each row a median of several runs; slow baselines get fewer, the table says how many):
- engine only (benchmarks/engine_only.py): the real Engine, admin and EventSink in this process with
  the no-op plugin, a SQLite file and a blob folder: node transitions per second, a 1,000-node chain,
  a 10,000-item map task;
- 1,000 concurrent executions through a real server's gRPC API (benchmarks/concurrent.py), no-op plugin;
- peers (benchmarks/peers.py): Prefect and Dagster, each in a cached venv of its own, running the same
  100-task chain and 1,000-item fan-out as the real-task rows (a row saying why when one cannot be installed);
- real flytekit tasks through a real server, warm workers on and off (benchmarks/real_tasks.py), with the
  peers' figures from the same run as baselines;
- the pytest plugin (benchmarks/pytest_plugin.py): its server ready, a hello-world test;
- Flyte 2 (benchmarks/flyte2.py): the `flyte` SDK's runs, an action's floor, a chain of 100, a map of 1,000;
- flyte-benchmarks (benchmarks/flyte_benchmarks/): Flyte's own benchmark scripts (fan-out, long chain,
  concurrency, swarm of core-sleep leaves) run unmodified against a fresh server, beside the published figures;
- postgresql (benchmarks/postgres.py): the engine-only rows and the 1,000 concurrent executions on a
  throwaway PostgreSQL cluster, the latter with 1 and with 3 replicas (skipped when PostgreSQL's server
  binaries are not installed).
Baselines: flytekit's local execution of the same workflows; flytelite with warm workers off; the peers.
Everything is written under one temporary folder, deleted only at the end (deleting files while
measuring would slow the disk under the next row).

    python -m benchmarks.run [--runs N] [--out PATH] [--only SECTION[,SECTION...]]
    make bench BENCH_ARGS="--only postgresql --runs 1"

`--only` measures some sections (engine, concurrent, peers, real, postgresql, kubernetes, compute, pytest, flyte2,
flyte-benchmarks, console);
such a partial run writes benchmarks/results/partial.md unless --out says otherwise, so latest.md always holds a whole run.
"""

from __future__ import annotations

import argparse
import os
import platform
import shutil
import sys
import tempfile
import time
import traceback
from collections.abc import Callable
from datetime import datetime, timezone
from pathlib import Path

import flytekit

from benchmarks.common import Row
from benchmarks.compute import compute_rows
from benchmarks.concurrent import concurrent_rows
from benchmarks.console_pages import console_rows
from benchmarks.engine_only import engine_rows
from benchmarks.flyte2 import flyte2_rows
from benchmarks.flyte_benchmarks import flyte_benchmark_rows
from benchmarks.k8s_pods import k8s_rows
from benchmarks.peers import PeerResult, measure_peers, peer_rows
from benchmarks.postgres import postgres_rows
from benchmarks.pytest_plugin import pytest_plugin_rows
from benchmarks.real_tasks import real_rows
from benchmarks.table import render

HERE = Path(__file__).parent
RESULTS = HERE / "results"


def sections(root: Path, runs: int) -> dict[str, tuple[str, Callable[[], list[Row]]]]:
    """Every section of a run, in order: its --only name, its title and what measures its rows."""
    peers: list[PeerResult] = []  # measured by the peers section, baselines of the real-task rows

    def peer_section() -> list[Row]:
        peers[:] = measure_peers(root, runs)
        return peer_rows(peers)

    return {
        "engine": ("engine only", lambda: engine_rows(root, runs=runs, local_runs=3)),
        "concurrent": ("concurrent executions", lambda: concurrent_rows(root, runs=runs, local_runs=1)),
        "peers": ("peers: Prefect and Dagster, each in its own venv", peer_section),
        "real": ("real tasks", lambda: real_rows(root, runs=runs, local_runs=3, peers=peers)),
        "postgresql": ("PostgreSQL, 1 and 3 replicas", lambda: postgres_rows(root, runs=runs)),
        "kubernetes": ("tasks as Kubernetes pods", lambda: k8s_rows(root, runs=runs)),
        "compute": ("compute engines: Spark, Ray and Dask tasks", lambda: compute_rows(root, runs=runs)),
        "pytest": ("pytest plugin", lambda: pytest_plugin_rows(runs=runs)),
        "flyte2": ("Flyte 2: the flyte SDK", lambda: flyte2_rows(root, runs=runs)),
        "flyte-benchmarks": ("flyte-benchmarks: Flyte's own benchmark scripts",
                             lambda: flyte_benchmark_rows(root / "flyte-benchmarks", runs=runs)),
        "console": ("console pages of large runs", lambda: console_rows(root, runs=max(runs, 5))),
    }


SECTION_NAMES = ("engine", "concurrent", "peers", "real", "postgresql", "kubernetes", "compute", "pytest", "flyte2",
                 "flyte-benchmarks", "console")


def measure(every: dict[str, tuple[str, Callable[[], list[Row]]]], chosen: list[str]) -> tuple[list[Row], list[str]]:
    """The chosen sections' rows, one section after another, and the names of those that failed: a section that
    raises gets one row saying so, and the other sections' rows are kept."""
    rows: list[Row] = []
    failed: list[str] = []
    for name in chosen:
        title, section = every[name]
        print(f"benchmark: {title} ...", file=sys.stderr, flush=True)
        try:
            section_rows = section()
        except Exception as e:  # noqa: BLE001 - any failure of a section; the traceback goes to stderr
            traceback.print_exc()
            failed.append(name)
            section_rows = [Row(f"{title}: failed", [], "", note=f"{type(e).__name__}: {e}".splitlines()[0])]
        rows += section_rows
        print(render(section_rows), file=sys.stderr, flush=True)
    return rows, failed


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
    parser.add_argument("--out", type=Path, default=None,
                        help="the results file (default: results/latest.md, or results/partial.md with --only)")
    parser.add_argument("--only", type=lambda text: [name.strip() for name in text.split(",") if name.strip()],
                        default=None, help="comma-separated sections to measure: " + ", ".join(SECTION_NAMES))
    args = parser.parse_args()
    unknown = sorted(set(args.only or ()) - set(SECTION_NAMES))
    if unknown:
        parser.error(f"unknown section(s) {', '.join(unknown)}; the sections are {', '.join(SECTION_NAMES)}")
    chosen = [name for name in SECTION_NAMES if args.only is None or name in args.only]
    out = args.out or RESULTS / ("latest.md" if args.only is None else "partial.md")
    started = time.monotonic()
    root = Path(tempfile.mkdtemp(prefix="flytelite-bench-"))
    # What every process of the run writes to its temp folder (flytekit makes a sandbox folder per local run
    # and per map item and leaves it: ~4,000 of them in a run) goes with the run's folder.
    (root / "tmp").mkdir()
    os.environ["TMPDIR"] = tempfile.tempdir = str(root / "tmp")
    try:
        rows, failed = measure(sections(root, args.runs), chosen)
    finally:
        shutil.rmtree(root, ignore_errors=True)
    minutes = (time.monotonic() - started) / 60
    table = render(rows)
    what = ("`make bench`" if args.only is None
            else f"`python -m benchmarks.run --only {','.join(chosen)}` (a partial run: only these sections)")
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(
        "# flytelite benchmarks\n\n"
        f"{what} on {datetime.now(timezone.utc):%Y-%m-%d %H:%M} UTC, {machine()}; took {minutes:.1f} min. "
        "Medians; every row of one run was measured in the same run, one after another.\n\n"
        + table + "\n" + NOTES)
    print(table)
    if failed:
        sys.exit(f"benchmark sections failed: {', '.join(failed)} (their rows say why)")


NOTES = """\
How each row is measured (see the modules in benchmarks/ for the code):
- *engine only*: admin, the engine and admin's EventSink in one process, tasks answered at once by the
  no-op plugin (benchmarks/noop_plugin.py), a SQLite file and a blob folder on this machine's
  disk; timed from CreateExecution until admin applied the workflow's SUCCEEDED event. "home on tmpfs"
  is the same with flytelite's home in /dev/shm: the difference is what the disk costs.
- *concurrent executions*: a real `flytelite start` with the no-op plugin (benchmarks/noop_server.py); 1,000
  CreateExecution calls sent at once over gRPC; timed until none is unfinished; each must succeed.
  Memory is the server's VmHWM from /proc.
- *real tasks*: a real `flytelite start`; workflows registered and first run with `pyflyte run --remote`, then
  run again with CreateExecution; times are the server's (execution created to SUCCEEDED). A task's run is its
  task execution's RUNNING to SUCCEEDED (process start until its exit was seen). With warm workers a map
  task's items run one after another in workers forked from the zygote, as many at once as the execution's max
  parallelism lets run (25, Flyte's default), each item with its own environment, folder, log and a fresh
  import of the task's code. The 10,000-item map runs once; the 1,000-item map at least 5 times and the
  watched chain at least 10 times per poll interval, each after an unwatched run, whatever --runs says (their
  goals judge ratios finer than one run's spread from the next). "home on tmpfs" runs the chain and the map
  again on a server whose home (blob store, attempts' folders and temp folders) is in /dev/shm: the difference
  is what creating and deleting their files costs on the disk; "engine.attempts_dir on tmpfs" runs the map on
  a server whose home is on the disk and whose attempts' folders alone are in /dev/shm. Servers run one after
  another: where the disk creates files slowly for minutes after many were deleted (see warm workers in
  docs/how-to/task-environments.md), a server's runs also pay for the deletions of the one before it. Hello
  world is timed by the client (`pyflyte run --remote` started to the execution seen SUCCEEDED, polled every
  20 ms), each run followed by `pyflyte run` of the same file, both from a venv holding flytekit alone
  (installed once, as the peers are): flytelite's own venv holds the test suite's pandas and pyarrow, which
  flytekit's packaging (`--copy auto` reads every loaded module's file, which imports the packages flytekit
  loads lazily) imports in the remote run only; that venv's figures are the row's baselines.
- *peers*: Prefect and Dagster at the versions pinned in benchmarks/peers.py, each installed once into a
  venv of its own outside the clone (FLYTELITE_BENCH_CACHE, else ~/.cache/flytelite-bench), running the
  real-task rows' two workflows as a script in that venv (benchmarks/peer_workflows/): a 100-task chain
  of `x + 1` tasks, each given the one before's result, and `x + 1` mapped over 1,000 integers, gathered
  into a list. Prefect: flows on its temporary local server (started by Prefect as by default, its home
  in the run's temporary folder, analytics off), tasks submitted to its default task runner, the chain
  through futures, the fan-out with `.map`. Dagster: jobs of ops run with `execute_in_process` (its
  in-process executor, an ephemeral instance), the fan-out through dynamic outputs and `.collect()`.
  Timed from the call to its result, which the script checks (a wrong result fails the row); one
  warm-up run of each workflow first (for Prefect it starts the server), and before each timed run
  the script waits, untimed, until the peer's processes are idle (Prefect's server goes on recording
  a 1,000-task run's events for a while, and the next run's flow would wait behind them).
- *PostgreSQL*: a throwaway PostgreSQL cluster started for the run (Debian's server binaries, fsync and
  synchronous_commit off, reached over a unix socket; flytelite/testing_pg.py), a fresh database per row.
  The engine-only rows are the ones above with that database instead of SQLite (blobs still on disk).
  The concurrent rows are the concurrent row above on 1 and on 3 `flytelite start` replicas (role all,
  default leases of 15 s) sharing the database and one home (blob folder); the 1,000 CreateExecution calls
  go round-robin to the replicas' ports, and every replica's engine competes for the executions through
  their leases. After each run the database says which replica held each finished execution's lease
  ("executions driven per replica") and whether any ran twice: every execution must have the same number
  of node and task executions, no task attempt past the first, and no replica may have dropped a round
  because another had taken the execution over (LeaseLost in its log). Memory is the largest VmHWM of a replica.
  The hand-off row: an API-only replica takes CreateExecution, an engine-only replica (resyncs an hour
  apart) learns of it only through NOTIFY; CreateExecution sent to the execution's RUNNING (its started_at).
- *Kubernetes*: the project's single-node cluster (scripts/k8s, flytelite/testing_k8s.py) started for the
  run; python tasks as pods of the skeleton image running the project's venv through hostPath mounts
  (a cold interpreter per pod), beside the same workflows as warm local processes on another server.
- *compute engines*: a Spark, a Ray and a Dask task (benchmarks/workflows/compute_wfs.py) in the engines' venv
  (.venv-compute, `make test-compute`), their node's QUEUED to SUCCEEDED with the engine's start apart, beside
  `pyflyte run` (local) of the same workflow from that venv (benchmarks/compute.py).
- *pytest plugin*: `flytelite_server`'s start (a fresh temporary home, until /healthz answers) and the
  example project's hello test (`flytelite_run`: fast registration of its module, the run, its outputs).
- *Flyte 2*: the `flyte` SDK (the venv `make test-flyte2` builds) running benchmarks/workflows/flyte2_wfs.py on a
  real server through scripts/flyte2_run.py; a run's time is its root action's, from its process's start to its
  end (ActionStatus.duration_ms). Each action is a cold `a0` process. The published figures are flyte-benchmarks'
  Flyte 2 runs on an 8 GiB orchestrator pod of a Kubernetes cluster.
- *flyte-benchmarks*: Flyte's own scripts (github:flyteorg/flyte-benchmarks, scripts/v1, at a pinned commit) run
  unmodified, as a new user runs them, against a fresh server on the default configuration, with a stand-in for
  flytekit's sleep plugin beside them (benchmarks/flyte_benchmarks/). A row is the server's clock: the first
  execution's creation to the last one's end; the script's own time (it polls every 5 s) and the server's peak
  memory are beside it, with the figures Flyte published (8 GiB orchestrator pods on clusters).
- *flytekit local*: the same workflow function called in this Python process (flytekit's local execution).
- *flytekit's pyflyte-map-execute alone*: the map row's items through flytekit's entrypoint in plain
  processes (one per core, forked after importing flytekit; benchmarks/map_floor.py), no server: each item
  still imports the task's module afresh, with sys.path and flytekit's contexts and registries put back
  between items, as flytelite's workers do. What flytekit itself costs, under flytelite's row. Each run
  comes just before a map run of flytelite's on the default server (the 10,000-item one too), once the
  folders of the run before were deleted: both find the disk alike.
"""


if __name__ == "__main__":
    main()
