"""Flyte's own benchmark suite (github:flyteorg/flyte-benchmarks, `scripts/v1`) run unmodified against flytelite.

The four scripts (fan-out, long chain, concurrency, swarm) are plain flytekit: `pyflyte run --remote` of a
`@dynamic` workflow of `core-sleep` leaves, then polling every 5 s until every execution is done. They run as a
new user runs them, with `FLYTECTL_CONFIG` naming a fresh flytelite server; the only addition is the stand-in
for flytekit's sleep plugin beside them (flytekitplugins/sleep, not on the package index). Each row gives:
- the script's own time (`wall_seconds`: from its pyflyte run to the poll that saw every execution done, so
  up to 5 s late);
- the server's clock: from the first execution's creation to the last one's end;
- the server's peak resident memory; for the long shapes, its resident memory at most in the first and in the
  last half of the run (sampled every 2 s); the database's size per leaf (SQLite).
The published figures (reference_results.md, 8 GiB orchestrator pods) are the baselines. Every shape runs
again on PostgreSQL with three replicas sharing the executions through their leases; the script talks to one of
them, and the shared database must show every leaf run once (benchmarks/replicas.py's audit).

The scripts come from a git repository at the commit pinned here: `--repo` (or FLYTE_BENCHMARKS_REPO) names a
clone URL or a local clone, by default flyteorg's on GitHub; the clone is kept in the cache folder.

    python -m benchmarks.flyte_benchmarks [--repo GIT] [--shapes fanout-1000,chain-100] [--runs N]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import threading
from dataclasses import dataclass, field
from pathlib import Path

from benchmarks.common import Row
from benchmarks.replicas import ReplicaSet
from benchmarks.server_client import BenchServer
from flytelite.testing_pg import PostgresCluster, create_database, find_pg_bin

REPO = "https://github.com/flyteorg/flyte-benchmarks"
COMMIT = "4c8ea2bee581dc332fc51e0f21c2abe98c09361b"
SCRIPTS = ("_common.py", "fanout.py", "long_chain.py", "concurrency.py", "swarm.py")
STAND_IN = Path(__file__).parent / "flytekitplugins"
CACHE = Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "flytelite-flyte-benchmarks"
RESULT = "RESULT_JSON:"
RSS_EVERY = 2.0


@dataclass(frozen=True)
class Shape:
    name: str
    script: str
    args: tuple[str, ...]
    goal: float  # seconds, on the server's clock
    published: str  # Flyte 1, Flyte 2 (OSS), Union
    once: bool = False  # measured once whatever the runs asked (it takes minutes)


SHAPES = {s.name: s for s in (
    Shape("fanout-1000", "fanout.py", ("--n", "1000"), 10, "Flyte 1 124 s · Flyte 2 29 s · Union 19 s"),
    Shape("fanout-6000", "fanout.py", ("--n", "6000"), 60, "Flyte 1 717 s · Flyte 2 115 s · Union 69 s", once=True),
    Shape("chain-100", "long_chain.py", ("--length", "100"), 5, "Flyte 1 74 s · Flyte 2 16 s · Union 19 s"),
    Shape("chain-500", "long_chain.py", ("--length", "500"), 20, "Flyte 1 365 s · Flyte 2 56 s"),
    Shape("swarm-2x2000", "swarm.py", ("--k", "2", "--n", "2000"), 30,
          "Flyte 1 301 s · Flyte 2 69–102 s · Union 54–59 s"),
    Shape("concurrency-1000", "concurrency.py", (), 0, "the script's defaults: 1,000 leaves held 120 s", once=True),
    Shape("swarm-100x2000", "swarm.py", ("--k", "100", "--n", "2000"), 1000,
          "Flyte 1 hours · Flyte 2 OOM at 8 GiB · Union 1,533 s", once=True),
)}
DEFAULT_SHAPES = tuple(SHAPES)
# Every shape is measured again on PostgreSQL with this many replicas, each leaf checked to have run once.
PG_REPLICAS = 3


class Unavailable(RuntimeError):
    pass


def scripts(repo: str) -> Path:
    """The v1 scripts at COMMIT, from a clone of `repo` kept in the cache folder."""
    clone = CACHE / "repo.git"
    if not clone.exists():
        CACHE.mkdir(parents=True, exist_ok=True)
        got = subprocess.run(["git", "clone", "--bare", "--quiet", repo, str(clone)], capture_output=True, text=True)
        if got.returncode != 0:
            shutil.rmtree(clone, ignore_errors=True)
            raise Unavailable(f"could not clone {repo}: {got.stderr.strip()}")
    folder = CACHE / COMMIT[:12]
    if not (folder / SCRIPTS[-1]).exists():
        folder.mkdir(parents=True, exist_ok=True)
        for name in SCRIPTS:
            got = subprocess.run(["git", "--git-dir", str(clone), "show", f"{COMMIT}:scripts/v1/{name}"],
                                 capture_output=True)
            if got.returncode != 0:
                raise Unavailable(f"{repo} has no scripts/v1/{name} at {COMMIT[:12]}: {got.stderr.decode().strip()}")
            (folder / name).write_bytes(got.stdout)
    return folder


@dataclass
class Measured:
    script_s: float  # the script's wall_seconds
    server_s: float  # first creation to last end, on the server's clock
    peak_mib: float  # the largest of the replicas'
    executions: int
    audit: str = ""  # with replicas: who drove what, and whether anything ran twice
    db_bytes_per_leaf: float = 0.0  # the SQLite file's size per leaf (on PostgreSQL: not measured)
    # The first server's resident memory, sampled every RSS_EVERY seconds while the script ran.
    rss_mib: list[float] = field(default_factory=list)

    def halves(self) -> str:
        """The largest resident memory in the first and in the last half of the run."""
        half = len(self.rss_mib) // 2
        if half == 0:
            return ""
        return (f"resident memory at most {max(self.rss_mib[:half]):.0f} MiB in the first half of the run, "
                f"{max(self.rss_mib[half:]):.0f} MiB in the last")


def measure(root: Path, source: Path, shape: Shape, database_url: str = "", replicas: int = 1) -> Measured:
    """One run of `shape` against a fresh server in `root`, or `replicas` of them on PostgreSQL (the script talks
    to the first; the replicas share the executions through their leases)."""
    with ReplicaSet(root, database_url, replicas) if database_url else _Alone(BenchServer(root)) as cluster:
        bench = cluster.first
        folder = root / "scripts"
        shutil.copytree(source, folder)
        shutil.copytree(STAND_IN, folder / "flytekitplugins", ignore=shutil.ignore_patterns("__pycache__"))
        env = {**bench.server.client_env(), "PYTHONPATH": str(folder)}
        with RssSampler(bench) as rss:
            out = subprocess.run([sys.executable, shape.script, *shape.args], cwd=folder, env=env,
                                 capture_output=True, text=True)
        line = next((x for x in out.stdout.splitlines() if x.startswith(RESULT)), None)
        if line is None:
            raise RuntimeError(f"{shape.script} printed no result ({out.returncode}):\n{out.stdout}\n{out.stderr}")
        result = json.loads(line[len(RESULT):])
        if result.get("phase") == "DRIVER_ERROR" or result["failed"] or result["timed_out"]:
            raise RuntimeError(f"{shape.name}: {result}\nserver log: {bench.server.log_path}")
        executions = bench.executions()
        first = min(e.closure.created_at.ToDatetime() for e in executions)
        last = max(e.closure.updated_at.ToDatetime() for e in executions)
        audit = ""
        if isinstance(cluster, ReplicaSet):
            found = cluster.audit({e.id.name for e in executions})
            if not found.clean:
                raise RuntimeError(f"{shape.name} on {replicas} replicas: {found.describe()}")
            audit = found.describe()
        database = sum(f.stat().st_size for f in bench.server.home.glob("flytelite.db*"))
        return Measured(result["wall_seconds"], (last - first).total_seconds(), cluster.peak_rss_mib(),
                        len(executions), audit, 0.0 if database_url else database / result["total_actions"],
                        rss.samples)


class RssSampler:
    """A server's resident memory every RSS_EVERY seconds, on a thread of its own, while in the `with` block."""

    def __init__(self, server: BenchServer):
        self.server = server
        self.samples: list[float] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._sample, daemon=True)

    def __enter__(self) -> RssSampler:
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()
        self._thread.join()

    def _sample(self) -> None:
        while not self._stop.wait(RSS_EVERY):
            self.samples.append(self.server.rss_mib())


class _Alone:
    """One BenchServer with a ReplicaSet's face."""

    def __init__(self, server: BenchServer):
        self.first = server

    def __enter__(self) -> _Alone:
        self.first.__enter__()
        return self

    def __exit__(self, *exc) -> None:
        self.first.__exit__(*exc)

    def peak_rss_mib(self) -> float:
        return self.first.peak_rss_mib()


def flyte_benchmark_rows(root: Path, runs: int, repo: str = "", shapes: tuple[str, ...] = DEFAULT_SHAPES) -> list[Row]:
    """The shapes on the default server, then on PostgreSQL with PG_REPLICAS replicas."""
    try:
        source = scripts(repo or os.environ.get("FLYTE_BENCHMARKS_REPO") or REPO)
    except Unavailable as e:
        return [Row("flyte-benchmarks: skipped", [], "", note=str(e))]
    rows = [_row(name, [measure(root / f"{name}-{i}", source, SHAPES[name]) for i in range(_runs(name, runs))])
            for name in shapes]
    try:
        bin_dir = find_pg_bin()
    except RuntimeError as e:
        return [*rows, Row("flyte-benchmarks on PostgreSQL: skipped", [], "", note=str(e))]
    cluster = PostgresCluster(bin_dir)
    cluster.start()
    try:
        for name in shapes:
            found = [measure(root / f"pg-{name}-{i}", source, SHAPES[name],
                             create_database(cluster.url, f"bench_{name.replace('-', '_')}_{i}"), PG_REPLICAS)
                     for i in range(_runs(name, runs))]
            rows.append(_row(name, found, f"PostgreSQL, {PG_REPLICAS} replicas"))
    finally:
        cluster.stop()
    return rows


def _runs(name: str, runs: int) -> int:
    return 1 if SHAPES[name].once else runs


def _row(name: str, found: list[Measured], where: str = "") -> Row:
    shape = SHAPES[name]
    row = Row(f"flyte-benchmarks {name}{f', {where}' if where else ''} (server's clock)", [m.server_s for m in found],
              "s", goal=f"< {shape.goal:g} s" if shape.goal else "",
              baselines=[f"published: {shape.published}",
                         f"the script's own time: {min(m.script_s for m in found):.1f}–"
                         f"{max(m.script_s for m in found):.1f} s (it polls every 5 s)"],
              note="; ".join(x for x in (
                  f"{found[0].executions} execution(s)", f"peak memory {max(m.peak_mib for m in found):.0f} MiB",
                  f"database {found[-1].db_bytes_per_leaf / 1024:.1f} KiB per leaf" if found[-1].db_bytes_per_leaf else "",
                  found[-1].halves() if shape.once else "", found[-1].audit) if x))
    return row.check("<", shape.goal) if shape.goal else row


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repo", default="")
    parser.add_argument("--shapes", default=",".join(DEFAULT_SHAPES), help=f"of {', '.join(SHAPES)}")
    parser.add_argument("--runs", type=int, default=1)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        for row in flyte_benchmark_rows(Path(tmp), args.runs, args.repo, tuple(args.shapes.split(","))):
            print(f"{row.name}: {row.values} {row.goal} {'met' if row.met else ''} | "
                  f"{'; '.join(row.baselines)} | {row.note}")


if __name__ == "__main__":
    main()
