"""Several `flytelite start` replicas (role all) on one PostgreSQL database and one home, for the benchmarks.

Every replica serves the API and runs an engine; they share the database (leases decide which replica
drives an execution) and the home's blob folder. After a run, `audit()` reads the shared database and
the replicas' logs: which replica drove how many executions, and whether any execution ran twice.
It only reads what the servers wrote; it never changes their state.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

from flyteidl.admin import execution_pb2
from sqlalchemy import create_engine, text

from benchmarks.server_client import BenchServer

# What a replica logs when a round of an execution another replica has taken over is dropped
# (propeller/workflow_executor.py, LeaseLost): two replicas evaluated the same execution.
DROPPED_ROUND = "is driven by another replica now"
TRACEBACK = re.compile(r"^Traceback ", re.MULTILINE)


@dataclass(frozen=True)
class Audit:
    """What the shared database and the replicas' logs say about the executions of a run."""

    # Executions each replica (by port) held the lease of when they finished.
    driven: dict[int, int]
    # Executions with a node or task-attempt count other than the most common one (a node run twice or lost).
    odd_executions: int
    # Task attempts past the first (a retry: with the no-op plugin only a system error or a takeover makes one).
    extra_attempts: int
    # Rounds a replica evaluated and dropped because another replica held the execution (from the logs).
    dropped_rounds: int
    # Tracebacks in the replicas' logs.
    tracebacks: int

    @property
    def clean(self) -> bool:
        return self.odd_executions == 0 and self.extra_attempts == 0 and self.dropped_rounds == 0

    def describe(self) -> str:
        per_replica = " / ".join(f"{n:,}" for _, n in sorted(self.driven.items()))
        verdict = "each ran once" if self.clean else (
            f"{self.odd_executions} with odd node/attempt counts, {self.extra_attempts} extra task attempts, "
            f"{self.dropped_rounds} rounds dropped by a replica that lost the lease")
        errors = f"; {self.tracebacks} tracebacks in the logs" if self.tracebacks else ""
        return f"executions driven per replica: {per_replica}; {verdict}{errors}"


class ReplicaSet:
    """`count` BenchServers on one database and home; use as a context manager."""

    def __init__(self, folder: Path, database_url: str, count: int, config: str = "", noop: bool = False):
        self.database_url = database_url
        config = f"{config}\ndatabase_url: {json.dumps(database_url)}\n"
        home = folder / "shared-home"
        self.servers = [BenchServer(folder / f"replica{i}", config, home=home, noop=noop) for i in range(count)]
        # Log counts already reported by earlier audits (each audit reports what the logs gained since).
        self._logged = {"dropped": 0, "tracebacks": 0}

    def __enter__(self) -> ReplicaSet:
        started: list[BenchServer] = []
        try:
            # One after another: the first migrates the empty database, the others find it migrated.
            for server in self.servers:
                server.__enter__()
                started.append(server)
        except BaseException:
            for server in started:
                server.__exit__(None, None, None)
            raise
        return self

    def __exit__(self, *exc) -> None:
        for server in self.servers:
            server.__exit__(*exc)

    @property
    def first(self) -> BenchServer:
        return self.servers[0]

    def create_all(self, request: execution_pb2.ExecutionCreateRequest, count: int) -> set[str]:
        """Send `count` CreateExecution calls at once, spread round-robin over the replicas; their names."""
        futures = [self.servers[i % len(self.servers)].stub.CreateExecution.future(request) for i in range(count)]
        return {f.result().id.name for f in futures}

    def peak_rss_mib(self) -> float:
        """The largest peak resident memory (VmHWM) of any replica so far."""
        return max(server.peak_rss_mib() for server in self.servers)

    def audit(self, names: set[str]) -> Audit:
        """Read the shared database about the executions `names` (before the replicas stop: a clean stop
        releases the leases, which name the replica that drove each execution)."""
        only = {"names": sorted(names)}
        engine = create_engine(self.database_url)
        try:
            with engine.connect() as conn:
                owners = dict(conn.execute(text(
                    "SELECT lease_owner, count(*) FROM flyte_workflows WHERE done AND name = ANY(:names) "
                    "GROUP BY lease_owner"), only).all())
                addresses = dict(conn.execute(text("SELECT id, address FROM replicas")).all())
                nodes = dict(conn.execute(text(
                    "SELECT execution_name, count(*) FROM node_executions WHERE execution_name = ANY(:names) "
                    "GROUP BY execution_name"), only).all())
                attempts = dict(conn.execute(text(
                    "SELECT execution_name, count(*) FROM task_executions WHERE execution_name = ANY(:names) "
                    "GROUP BY execution_name"), only).all())
                extra = conn.execute(text(
                    "SELECT count(*) FROM task_executions WHERE retry_attempt > 0 AND execution_name = ANY(:names)"),
                    only).scalar()
        finally:
            engine.dispose()
        logs = [server.server.log_text() for server in self.servers]
        dropped = self._since_last("dropped", sum(log.count(DROPPED_ROUND) for log in logs))
        tracebacks = self._since_last("tracebacks", sum(len(TRACEBACK.findall(log)) for log in logs))
        return Audit(driven=self._by_port(owners, addresses),
                     odd_executions=len(_odd(names, nodes) | _odd(names, attempts)), extra_attempts=extra or 0,
                     dropped_rounds=dropped, tracebacks=tracebacks)

    def _by_port(self, owners: dict[str | None, int], addresses: dict[str, str]) -> dict[int, int]:
        driven = {server.server.port: 0 for server in self.servers}
        for owner, count in owners.items():
            address = addresses.get(owner or "", "")
            port = int(address.rsplit(":", 1)[1]) if address else 0  # 0: a replica no longer listed
            driven[port] = driven.get(port, 0) + count
        return driven

    def _since_last(self, what: str, total: int) -> int:
        gained, self._logged[what] = total - self._logged[what], total
        return gained


def _odd(names: set[str], counts: dict[str, int]) -> set[str]:
    """The executions among `names` whose count differs from the most common one (missing counts as 0)."""
    every = {name: counts.get(name, 0) for name in names}
    if not every:
        return set()
    usual = Counter(every.values()).most_common(1)[0][0]
    return {name for name, n in every.items() if n != usual}
