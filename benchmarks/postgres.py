"""The PostgreSQL rows of `make bench`: the engine-only rows, and 1,000 concurrent executions with 1 and 3 replicas.

One throwaway PostgreSQL cluster (flytelite/testing_pg.py: Debian's server binaries, fsync off, a unix
socket) serves every row, each row on a fresh database of its own.
- engine only: engine_only.py's in-process admin + engine + EventSink, no-op plugin, on PostgreSQL;
- hand-off: an API-only replica takes CreateExecution, an engine-only replica runs it (NOTIFY wakes it);
- concurrent executions: as concurrent.py, but `flytelite start` replicas (role all, default leases)
  share the database and one home (blob folder); the CreateExecution calls are spread over their ports.
  After each run the shared database says which replica drove each execution and whether any ran twice.
When no PostgreSQL server binary is installed the section is one row saying so.
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

from flyteidl.admin import common_pb2, execution_pb2

from benchmarks.common import D, P, Row, integer, register
from benchmarks.concurrent import EXECUTIONS
from benchmarks.engine_only import MAP_ITEMS, measure
from benchmarks.replicas import Audit, ReplicaSet
from benchmarks.server_client import BenchServer, seconds
from benchmarks.workflows import engine_wfs
from flytelite.testing_pg import PostgresCluster, create_database, find_pg_bin

REPLICA_COUNTS = (1, 3)
HANDOFF_RUNS = 20
# Longer than any healthy run on a loaded 2-core machine; past it the executions count as stuck.
STUCK_AFTER_SECONDS = 600


def postgres_rows(root: Path, runs: int) -> list[Row]:
    """Every PostgreSQL row, each `runs` times; one row saying why when PostgreSQL is not installed."""
    try:
        bin_dir = find_pg_bin()
    except RuntimeError as e:
        return [Row("PostgreSQL rows: skipped", [], "", note=str(e))]
    cluster = PostgresCluster(bin_dir)
    cluster.start()
    try:
        rows = _engine_rows(root / "pg-engine-home", create_database(cluster.url, "bench_engine"), runs)
        for count in REPLICA_COUNTS:
            database_url = create_database(cluster.url, f"bench_concurrent_{count}")
            rows.append(_concurrent_row(root / f"pg-concurrent-{count}", database_url, count, runs))
        rows.append(_handoff_row(root / "pg-handoff", create_database(cluster.url, "bench_handoff")))
    finally:
        cluster.stop()
    return rows


def _engine_rows(home: Path, database_url: str, runs: int) -> list[Row]:
    rates, chains, maps = measure(home, runs, database_url)
    return [
        Row(f"PostgreSQL, engine only: node transitions per second ({engine_wfs.WIDE:,}-node wide workflow)",
            rates, "/s", note="node phase changes (NodeExecutionEvents applied by admin) / wall time"),
        Row(f"PostgreSQL, engine only: {engine_wfs.CHAIN:,}-node chain", chains, "s"),
        Row(f"PostgreSQL, engine only: {MAP_ITEMS:,}-item map task", maps, "s"),
    ]


def _concurrent_row(folder: Path, database_url: str, replicas: int, runs: int) -> Row:
    """`runs` rounds of EXECUTIONS CreateExecution calls at once over `replicas` servers' ports."""
    seconds, accepted, audits, peaks = [], [], [], []
    with ReplicaSet(folder, database_url, replicas, noop=True) as cluster:
        lp = register(cluster.first.stub, engine_wfs.three_wf)
        for run in range(runs):
            request = execution_pb2.ExecutionCreateRequest(
                project=P, domain=D, spec=execution_pb2.ExecutionSpec(launch_plan=lp),
                inputs={"literals": {"x": integer(run)}})
            started = time.perf_counter()
            names = cluster.create_all(request, EXECUTIONS)
            accepted.append(time.perf_counter() - started)
            assert len(names) == EXECUTIONS, "CreateExecution handed out the same name twice"
            _wait_until_done(cluster, started)
            seconds.append(time.perf_counter() - started)
            audits.append(cluster.audit(names))
            peaks.append(cluster.peak_rss_mib())
            print(f"  {replicas} replica(s), run {run + 1}: accepted {accepted[-1]:.2f} s, done {seconds[-1]:.2f} s; "
                  f"{audits[-1].describe()}", file=sys.stderr, flush=True)
        if cluster.first.failed():
            raise RuntimeError(f"some of the {EXECUTIONS} concurrent executions on {replicas} replica(s) did not "
                               f"succeed; see the logs under {folder}")
        done = cluster.first.stub.ListExecutions(common_pb2.ResourceListRequest(
            id=common_pb2.NamedEntityIdentifier(project=P, domain=D), limit=10_000, filters="eq(phase,SUCCEEDED)"))
        assert len(done.executions) == EXECUTIONS * runs, f"{len(done.executions)} executions succeeded"
    plural = "replica" if replicas == 1 else "replicas"
    return Row(f"PostgreSQL, {replicas} {plural} (role all): {EXECUTIONS:,} concurrent executions of a 3-node "
               "workflow, through gRPC, all done", seconds, "s", goal="all accepted and completed, each once",
               met=all(a.clean for a in audits), note=_note(accepted, audits, peaks))


def _handoff_row(folder: Path, database_url: str, runs: int = HANDOFF_RUNS) -> Row:
    """CreateExecution on an API-only replica to the execution RUNNING on an engine-only replica: the
    wake-up crosses processes through PostgreSQL's NOTIFY (resyncs are an hour apart, so nothing else can)."""
    config = ("engine:\n  resync_seconds: 3600\n  lease_seconds: 10800\n"
              f"database_url: {json.dumps(database_url)}\n")
    home = folder / "shared-home"
    api = BenchServer(folder / "api", config, home=home, noop=True)
    engine = BenchServer(folder / "engine", config, home=home, noop=True)
    api.server.role, engine.server.role = "api", "engine"
    latencies = []
    with api, engine:
        lp = register(api.stub, engine_wfs.three_wf)
        for run in range(runs):
            sent = time.time()
            name = api.create(lp, {"x": integer(run)})
            execution = api.wait(name)
            latencies.append(seconds(execution.closure.started_at) - sent)
    return Row("PostgreSQL, an API replica and an engine replica: CreateExecution to the execution RUNNING",
               latencies, "ms", goal="~100 ms", note="the engine replica learns of the execution through "
               "LISTEN/NOTIFY only (resyncs an hour apart); client clock to server clock, one machine"
               ).check("<=", 0.100)


def _wait_until_done(cluster: ReplicaSet, started: float) -> None:
    while cluster.first.unfinished():
        if time.perf_counter() - started > STUCK_AFTER_SECONDS:
            raise RuntimeError(f"executions still unfinished {STUCK_AFTER_SECONDS} s after they were created on "
                               f"{len(cluster.servers)} replica(s): stuck; see the logs under "
                               f"{cluster.first.folder.parent}")
        time.sleep(0.05)


def _note(accepted: list[float], audits: list[Audit], peaks: list[float]) -> str:
    median_accepted = sorted(accepted)[len(accepted) // 2]
    # The first run that was not clean, if any: that is what a reader must see.
    run, audit = next(((i, a) for i, a in enumerate(audits) if not a.clean), (len(audits) - 1, audits[-1]))
    return (f"all accepted after {median_accepted:.2f} s (median); peak memory of a replica (VmHWM) "
            f"{max(peaks):,.0f} MiB; run {run + 1}: {audit.describe()}")
