"""Engine-only benchmark rows: the real Engine, admin and EventSink in this process, tasks answered by the no-op plugin.

Full persistence is on: a SQLite file, a blob folder, every event applied by admin's EventSink. What is
timed is CreateExecution (in-process) until admin has applied the workflow's SUCCEEDED event.
- node transitions per second: node phase changes (NodeExecutionEvents) of a WIDE-node workflow / wall time;
- a CHAIN-node chain; a map task over a 10,000-item list.
Baseline: flytekit's local execution of the same workflow (its tasks really run, in this process).
"""

from __future__ import annotations

import asyncio
import tempfile
import threading
import time
from pathlib import Path

from flyteidl.admin import execution_pb2
from flyteidl.core import execution_pb2 as core_execution_pb2
from flyteidl.core import identifier_pb2, literals_pb2
from flyteidl.event import event_pb2

from benchmarks import common
from benchmarks.common import D, P, Row, baseline, integer, integers, register, timed
from benchmarks.noop_plugin import NoopPlugin
from benchmarks.workflows import engine_wfs
from flytelite.admin.events import EventSink
from flytelite.admin.service import AdminService
from flytelite.config import Config, EngineConfig
from flytelite.plugins.registry import PluginRegistry
from flytelite.propeller.engine import Engine
from flytelite.propeller.nodes.registry import default_handlers
from flytelite.server.app import admin_clients, build_context

TERMINAL = {core_execution_pb2.WorkflowExecution.SUCCEEDED, core_execution_pb2.WorkflowExecution.FAILED,
            core_execution_pb2.WorkflowExecution.ABORTED, core_execution_pb2.WorkflowExecution.TIMED_OUT}
MAP_ITEMS = 10_000


class CountingSink(EventSink):
    """Admin's real EventSink, counting node events and telling waiters when an execution is done."""

    def __init__(self, ctx):
        super().__init__(ctx)
        self.node_events = 0
        self._done: dict[str, threading.Event] = {}
        self._lock = threading.Lock()

    def expect(self, name: str) -> threading.Event:
        with self._lock:
            return self._done.setdefault(name, threading.Event())

    def node_event(self, event) -> None:
        super().node_event(event)
        self._applied([event])

    def workflow_event(self, event) -> None:
        super().workflow_event(event)
        self._applied([event])

    def apply_batch(self, events, then=None) -> None:
        super().apply_batch(events, then)
        self._applied(events)

    def _applied(self, events) -> None:
        for event in events:
            if isinstance(event, event_pb2.NodeExecutionEvent):
                self.node_events += 1
            elif isinstance(event, event_pb2.WorkflowExecutionEvent) and event.phase in TERMINAL:
                self.expect(event.execution_id.name).set()


class _Admin:
    """AdminService called as a gRPC stub is (request only)."""

    def __init__(self, svc: AdminService):
        self.svc = svc

    def __getattr__(self, name: str):
        method = getattr(self.svc, name)
        return lambda request: method(request, None)


class EngineBench:
    """An in-process flytelite (admin + engine, no server) on a loop thread; use as a context manager.

    `database_url` is an SQLAlchemy URL (PostgreSQL); empty: a SQLite file in `home`.
    """

    def __init__(self, home: Path, database_url: str = ""):
        self.ctx = build_context(Config(home=home, database_url=database_url,
                                        engine=EngineConfig(resync_seconds=30.0, warm_workers=False)))
        self.svc = AdminService(self.ctx)
        self.admin = _Admin(self.svc)
        self.sink = CountingSink(self.ctx)
        plugins = PluginRegistry([NoopPlugin()])
        self.engine = Engine(self.ctx, self.sink, plugins=plugins, handlers=default_handlers(plugins),
                             clients=admin_clients(self.ctx))
        self.ctx.notify_engine = self.engine.notify
        self.last_name = ""
        self.loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self.loop.run_forever, name="bench-loop", daemon=True)

    def __enter__(self) -> EngineBench:
        self._thread.start()
        asyncio.run_coroutine_threadsafe(self.engine.start(), self.loop).result()
        return self

    def __exit__(self, *exc) -> None:
        asyncio.run_coroutine_threadsafe(self.engine.stop(), self.loop).result()
        self.loop.call_soon_threadsafe(self.loop.stop)
        self._thread.join()
        self.ctx.db.dispose()

    def run(self, lp_id: identifier_pb2.Identifier, inputs: dict[str, literals_pb2.Literal],
            timeout: float = 300) -> tuple[float, int]:
        """Create an execution and wait until admin recorded it SUCCEEDED: (seconds, node events)."""
        events = self.sink.node_events
        started = time.perf_counter()
        name = self.svc.CreateExecution(execution_pb2.ExecutionCreateRequest(
            project=P, domain=D, spec=execution_pb2.ExecutionSpec(launch_plan=lp_id),
            inputs=literals_pb2.LiteralMap(literals=inputs))).id.name
        self.last_name = name
        if not self.sink.expect(name).wait(timeout):
            raise TimeoutError(f"execution {name} did not finish in {timeout} s")
        elapsed = time.perf_counter() - started
        got = self.svc.GetExecution(execution_pb2.WorkflowExecutionGetRequest(
            id=identifier_pb2.WorkflowExecutionIdentifier(project=P, domain=D, name=name)))
        assert got.closure.phase == core_execution_pb2.WorkflowExecution.SUCCEEDED, got.closure.error
        return elapsed, self.sink.node_events - events


def measure(home: Path, runs: int, database_url: str = "") -> tuple[list[float], list[float], list[float]]:
    """(node transitions per second, chain seconds, map seconds), `runs` of each, side by side."""
    rates, chains, maps = [], [], []
    with EngineBench(home, database_url) as bench:
        wide = register(bench.admin, engine_wfs.wide_wf)
        chain = register(bench.admin, engine_wfs.chain_wf)
        mapped = register(bench.admin, engine_wfs.map_wf)
        for _ in range(runs):
            seconds, events = bench.run(wide, {"x": integer(0)})
            rates.append(events / seconds)
            chains.append(bench.run(chain, {"x": integer(0)})[0])
            maps.append(bench.run(mapped, {"xs": integers(list(range(MAP_ITEMS)))})[0])
    return rates, chains, maps


def engine_rows(root: Path, runs: int, local_runs: int) -> list[Row]:
    """The three engine-only rows, each `runs` times; flytekit local baselines `local_runs` times.

    The same rows with flytelite's home on tmpfs (when /dev/shm exists) show what the disk costs.
    """
    rates, chains, maps = measure(root / "engine-home", runs)
    shm = common.on_tmpfs(lambda tmp: measure(tmp / "home", runs))
    local_wide = [timed(lambda: engine_wfs.wide_wf(x=0)) for _ in range(local_runs)]
    local_chain = [timed(lambda: engine_wfs.chain_wf(x=0)) for _ in range(local_runs)]
    local_map = [timed(lambda: engine_wfs.map_wf(xs=list(range(MAP_ITEMS)))) for _ in range(local_runs)]
    # flytekit's local execution sends no events: its rate is nodes completed per second.
    local_rates = [engine_wfs.WIDE / s for s in local_wide]

    def tmpfs_baseline(i: int, unit: str) -> list[str]:
        return [baseline(common.TMPFS_BASELINE, shm[i], unit)] if shm is not None else []

    return [
        Row(f"engine only: node transitions per second ({engine_wfs.WIDE:,}-node wide workflow)", rates, "/s",
            goal=">= 2,000 /s", note="node phase changes (NodeExecutionEvents applied by admin) / wall time",
            baselines=[baseline("flytekit local, nodes run per second", local_rates, "/s"),
                       *tmpfs_baseline(0, "/s")]).check(">=", 2000),
        Row(f"engine only: {engine_wfs.CHAIN:,}-node chain", chains, "s", goal="< 2 s",
            baselines=[baseline("flytekit local", local_chain, "s"), *tmpfs_baseline(1, "s")],
            ).check("<", 2.0),
        Row(f"engine only: {MAP_ITEMS:,}-item map task", maps, "s", goal="< 10 s",
            baselines=[baseline("flytekit local", local_map, "s"), *tmpfs_baseline(2, "s")]).check("<", 10.0),
    ]


if __name__ == "__main__":
    from benchmarks.table import render

    with tempfile.TemporaryDirectory(prefix="flytelite-bench-") as root:
        print(render(engine_rows(Path(root), runs=3, local_runs=1)))
