"""Task caching in the engine: hits without running, misses that populate, serialized runs and overwrite.

Tasks run in-process (tests/propeller/inprocess.py) against a real SQLite file and blob folder; the
catalog is the real one. The last test reports to admin's real EventSink and reads node executions back.
"""

from __future__ import annotations

import asyncio
from datetime import timedelta, timezone

from flyteidl.admin import node_execution_pb2, task_execution_pb2
from flyteidl.core import catalog_pb2, compiler_pb2, literals_pb2
from flyteidl.core import identifier_pb2 as idpb
from flytekit import task, workflow

from flytelite.catalog import Catalog, catalog_key
from flytelite.compiler import compile_workflow
from flytelite.propeller.engine import Engine
from flytelite.propeller.nodes.registry import default_handlers
from flytelite.propeller.nodes.task.cache import WAITING_REASON
from flytelite.propeller.phases import NodeStatusPhase, WorkflowStatusPhase
from flytelite.store.models import CatalogReservation
from tests.catalog.helpers import T0, ManualClock
from tests.propeller import harness as h
from tests.propeller.inprocess import KEEP_RUNNING, InProcessPlugin, registry

HIT, POPULATED, MISS, SKIPPED, DISABLED = (catalog_pb2.CACHE_HIT, catalog_pb2.CACHE_POPULATED, catalog_pb2.CACHE_MISS,
                                           catalog_pb2.CACHE_SKIPPED, catalog_pb2.CACHE_DISABLED)
Reservation = catalog_pb2.CatalogReservation


@task(cache=True, cache_version="1", cache_ignore_input_vars=("note",))
def cached_double(x: int, note: str) -> int:
    return 2 * x


@workflow
def double_wf(x: int, note: str = "") -> int:
    return cached_double(x=x, note=note)


@task(cache=True, cache_version="1", cache_serialize=True)
def serial_square(x: int) -> int:
    return x * x


@workflow
def square_wf(x: int) -> int:
    return serial_square(x=x)


@task(cache=True, cache_version="1")
def cached_nothing(x: int) -> None:
    return None


@workflow
def nothing_wf(x: int) -> None:
    cached_nothing(x=x)


def compiled(entity, version: str = "v1", cache_version: str | None = None) -> compiler_pb2.CompiledWorkflowClosure:
    """The workflow as registered under `version`, its tasks run in-process; cache_version replaces the task's."""
    wf, tasks = h.serialize(entity, version)
    for t in tasks:
        t.type = "in-process"
        if cache_version is not None:
            t.metadata.discovery_version = cache_version
    return compile_workflow(wf.template, list(wf.sub_workflows), [compiler_pb2.CompiledTask(template=t) for t in tasks],
                            [])


def run_one_by_one(ctx, plugin, executions) -> h.RecordingSink:
    """Run (closure, inputs, name, spec fields) executions one after the other on one engine."""
    sink = h.RecordingSink()
    plugins = registry(plugin)

    async def go():
        engine = Engine(ctx, sink, plugins=plugins, handlers=default_handlers(plugins))
        await engine.start()
        try:
            for closure, inputs, name, fields in executions:
                key = h.create_execution(ctx, closure, inputs, name, **fields)
                status = await h.run_to_completion(engine, ctx, key)
                assert status.phase == WorkflowStatusPhase.SUCCESS, status.error
        finally:
            await engine.stop()

    asyncio.run(go())
    return sink


def succeeded_metadata(sink: h.RecordingSink, name: str, node_id: str = "n0"):
    events = [e for e in sink.node_events(node_id) if e.id.execution_id.name == name]
    assert events[-1].phase == 3, [e.phase for e in events]
    return events[-1].task_node_metadata


def node_phases(sink, name: str, node_id: str = "n0") -> list[int]:
    return [e.phase for e in sink.node_events(node_id) if e.id.execution_id.name == name]


def task_events(sink, name: str, node_id: str = "n0") -> list:
    return [e for e in sink.task_events(node_id) if e.parent_node_execution_id.execution_id.name == name]


def waiting(ctx, key) -> bool:
    """True while node n0 of the execution waits on someone else's cache reservation."""
    node = h.load(ctx, key)[1].nodes.get("n0")
    return (node is not None and node.phase == NodeStatusPhase.QUEUED and node.message == WAITING_REASON
            and node.task.cache.get("reservation") == Reservation.RESERVATION_EXISTS)


def end_outputs(ctx, name: str) -> dict:
    return h.outputs(ctx, (h.P, h.D, name))


def test_second_run_is_a_hit_that_starts_nothing(tmp_path):
    ctx = h.make_context(tmp_path)
    plugin = InProcessPlugin({"cached_double": lambda i, a: {"o0": 2 * i["x"]}})
    wf = compiled(double_wf)
    sink = run_one_by_one(ctx, plugin, [(wf, {"x": 21, "note": "a"}, "first", {}),
                                        (wf, {"x": 21, "note": "a"}, "second", {})])
    assert plugin.calls == [("n0", 0)]
    assert end_outputs(ctx, "second") == {"o0": 42}
    first, second = succeeded_metadata(sink, "first"), succeeded_metadata(sink, "second")
    assert first.cache_status == POPULATED and second.cache_status == HIT
    # Both name the same dataset and tag; the hit says which execution computed it.
    assert first.catalog_key.dataset_id == second.catalog_key.dataset_id
    assert second.catalog_key.dataset_id.name == "flyte_task-tests.propeller.nodes.task.test_cache.cached_double"
    assert second.catalog_key.dataset_id.version.startswith("1-")
    assert second.catalog_key.artifact_tag.name.startswith("flyte_cached-")
    assert second.catalog_key.artifact_tag.artifact_id == first.catalog_key.artifact_tag.artifact_id
    source = second.catalog_key.source_task_execution
    assert (source.node_execution_id.execution_id.name, source.node_execution_id.node_id) == ("first", "n0")
    # A hit reports no task execution at all, as FlytePropeller (the node never reaches the task handler's plugin).
    assert task_events(sink, "second") == [] and task_events(sink, "first")
    assert node_phases(sink, "second") == [1, 3]  # QUEUED, SUCCEEDED
    hit_event = sink.node_events("n0")[-1]
    assert hit_event.output_uri.endswith("-second/n0/data/0/outputs.pb")
    assert ctx.blobs.exists(hit_event.output_uri)


def test_key_follows_inputs_and_cache_version_but_not_task_version(tmp_path):
    ctx = h.make_context(tmp_path)
    plugin = InProcessPlugin({"cached_double": lambda i, a: {"o0": 2 * i["x"]}})
    sink = run_one_by_one(ctx, plugin, [
        (compiled(double_wf), {"x": 1, "note": "a"}, "base", {}),
        # An ignored input differs: hit.
        (compiled(double_wf), {"x": 1, "note": "something else"}, "ignored", {}),
        # Re-registered code (new task version, same cache_version): hit.
        (compiled(double_wf, version="v2"), {"x": 1, "note": "a"}, "reregistered", {}),
        # A counted input differs: miss.
        (compiled(double_wf), {"x": 2, "note": "a"}, "otherinput", {}),
        # cache_version bumped: miss, even for the inputs cached before.
        (compiled(double_wf, version="v3", cache_version="2"), {"x": 1, "note": "a"}, "bumped", {}),
    ])
    statuses = {name: succeeded_metadata(sink, name).cache_status
                for name in ("base", "ignored", "reregistered", "otherinput", "bumped")}
    assert statuses == {"base": POPULATED, "ignored": HIT, "reregistered": HIT, "otherinput": POPULATED,
                        "bumped": POPULATED}
    assert len(plugin.calls) == 3
    assert succeeded_metadata(sink, "bumped").catalog_key.dataset_id.version.startswith("2-")
    assert {e.key.cache_version for e in Catalog(ctx).list()} == {"1", "2"}


def test_overwrite_cache_reruns_and_replaces_the_entry(tmp_path):
    ctx = h.make_context(tmp_path)
    runs = []

    def counted(inputs, attempt):
        runs.append(inputs["x"])
        return {"o0": 100 * len(runs)}

    plugin = InProcessPlugin({"cached_double": counted})
    wf = compiled(double_wf)
    sink = run_one_by_one(ctx, plugin, [(wf, {"x": 5, "note": ""}, "original", {}),
                                        (wf, {"x": 5, "note": ""}, "overwriting", {"overwrite_cache": True}),
                                        (wf, {"x": 5, "note": ""}, "after", {})])
    assert runs == [5, 5]
    assert succeeded_metadata(sink, "overwriting").cache_status == POPULATED
    # While it ran, the overwriting node said it skipped the lookup.
    running = [e for e in sink.node_events("n0") if e.id.execution_id.name == "overwriting" and e.phase == 2]
    assert all(e.task_node_metadata.cache_status == SKIPPED for e in running)
    assert succeeded_metadata(sink, "after").cache_status == HIT
    assert end_outputs(ctx, "after") == {"o0": 200}
    [entry] = Catalog(ctx).list()
    assert entry.source.node_execution_id.execution_id.name == "overwriting"


def test_task_without_outputs_is_never_cached(tmp_path):
    ctx = h.make_context(tmp_path)
    plugin = InProcessPlugin({"cached_nothing": lambda i, a: {}})
    wf = compiled(nothing_wf)
    sink = run_one_by_one(ctx, plugin, [(wf, {"x": 1}, "once", {}), (wf, {"x": 1}, "twice", {})])
    assert len(plugin.calls) == 2
    assert succeeded_metadata(sink, "twice").cache_status == DISABLED
    assert Catalog(ctx).list() == []


def test_serialized_runs_compute_once_and_the_waiter_hits(tmp_path):
    ctx = h.make_context(tmp_path)
    release = {"go": False}
    plugin = InProcessPlugin({"serial_square": lambda i, a: {"o0": i["x"] ** 2} if release["go"] else KEEP_RUNNING})
    sink = h.RecordingSink()
    plugins = registry(plugin)
    wf = compiled(square_wf)

    async def go():
        engine = Engine(ctx, sink, plugins=plugins, handlers=default_handlers(plugins))
        await engine.start()
        try:
            owner = h.create_execution(ctx, wf, {"x": 9}, "owner")
            engine.notify(owner)
            await h.wait_for(lambda: plugin.running == {"n0"})
            waiter = h.create_execution(ctx, wf, {"x": 9}, "waiter")
            engine.notify(waiter)
            await h.wait_for(lambda: waiting(ctx, waiter))
            await asyncio.sleep(1.5)  # the waiter keeps looking; it must not start the task
            assert plugin.calls == [("n0", 0)]
            release["go"] = True
            engine.notify(owner)
            for key in (owner, waiter):
                status = await h.run_to_completion(engine, ctx, key, timeout=30)
                assert status.phase == WorkflowStatusPhase.SUCCESS
        finally:
            await engine.stop()

    asyncio.run(go())
    assert plugin.calls == [("n0", 0)]
    assert end_outputs(ctx, "waiter") == {"o0": 81}
    owner_md, waiter_md = succeeded_metadata(sink, "owner"), succeeded_metadata(sink, "waiter")
    assert owner_md.cache_status == POPULATED and owner_md.reservation_status == Reservation.RESERVATION_RELEASED
    assert waiter_md.cache_status == HIT
    owner_running = [e for e in sink.node_events("n0") if e.id.execution_id.name == "owner" and e.phase == 2]
    assert owner_running and owner_running[0].task_node_metadata.reservation_status == Reservation.RESERVATION_ACQUIRED
    assert task_events(sink, "waiter") == []
    with ctx.db.session() as s:
        assert s.query(CatalogReservation).count() == 0


def test_a_running_owner_holds_its_reservation_for_thirty_seconds_and_renews_it_twice_per_lease(tmp_path):
    # A replica that dies mid-task leaves its reservations held for much longer than the takeover of its
    # executions (a lease and a sweep), so the new owner keeps the key (tests/e2e/test_replica_faults.py).
    ctx = h.make_context(tmp_path, lease_seconds=4.0)  # resync_seconds stays 30: only renewals wake the node
    clock = ctx.clock = ManualClock()
    plugin = InProcessPlugin({"serial_square": lambda i, a: KEEP_RUNNING})
    plugins = registry(plugin)

    def expiry():
        with ctx.db.session() as s:
            row = s.query(CatalogReservation).one_or_none()
            return row and (row.heartbeat_seconds, row.expires_at.replace(tzinfo=timezone.utc))

    async def go():
        engine = Engine(ctx, h.RecordingSink(), plugins=plugins, handlers=default_handlers(plugins))
        await engine.start()
        try:
            key = h.create_execution(ctx, square_wf_closure, {"x": 3}, "owner")
            engine.notify(key)
            await h.wait_for(lambda: plugin.running == {"n0"})
            assert expiry() == (10.0, T0 + timedelta(seconds=30))
            clock.advance(2.0)
            await h.wait_for(lambda: expiry() == (10.0, T0 + timedelta(seconds=32)))
        finally:
            await engine.stop()

    square_wf_closure = compiled(square_wf)
    asyncio.run(go())


def test_a_crashed_owners_reservation_expires_and_a_waiter_takes_over(tmp_path):
    ctx = h.make_context(tmp_path, resync_seconds=2.0)
    clock = ctx.clock = ManualClock()
    plugin = InProcessPlugin({"serial_square": lambda i, a: {"o0": i["x"] ** 2}})
    plugins = registry(plugin)
    sink = h.RecordingSink()
    wf = compiled(square_wf)
    template = next(t.template for t in wf.tasks)
    inputs = literals_pb2.LiteralMap(literals={"x": h.literal(4)})
    # An owner that took the key and then died (a server that crashed mid-task, say).
    held = Catalog(ctx).get_or_extend_reservation(catalog_key(template, inputs), "gone/for/good/n0/0", 2.0)
    assert held.acquired

    async def go():
        engine = Engine(ctx, sink, plugins=plugins, handlers=default_handlers(plugins))
        await engine.start()
        try:
            key = h.create_execution(ctx, wf, {"x": 4}, "survivor")
            engine.notify(key)
            await h.wait_for(lambda: waiting(ctx, key))
            await asyncio.sleep(1.2)  # it keeps looking, and keeps waiting while the reservation lasts
            assert waiting(ctx, key) and plugin.calls == []
            clock.advance(3 * 2.0 + 0.1)  # three missed heartbeats
            status = await h.run_to_completion(engine, ctx, key, timeout=30)
            assert status.phase == WorkflowStatusPhase.SUCCESS
        finally:
            await engine.stop()

    asyncio.run(go())
    assert plugin.calls == [("n0", 0)]
    assert succeeded_metadata(sink, "survivor").cache_status == POPULATED
    # Waiting sent no event: the node went from QUEUED to SUCCEEDED once the key was free.
    assert node_phases(sink, "survivor") == [1, 3]


def test_a_failed_owner_frees_the_key_and_caches_nothing(tmp_path):
    ctx = h.make_context(tmp_path)

    def fails(inputs, attempt):
        raise ValueError("no square today")

    plugin = InProcessPlugin({"serial_square": fails})
    plugins = registry(plugin)
    sink = h.RecordingSink()

    async def go():
        engine = Engine(ctx, sink, plugins=plugins, handlers=default_handlers(plugins))
        await engine.start()
        try:
            key = h.create_execution(ctx, compiled(square_wf), {"x": 3}, "failing")
            return await h.run_to_completion(engine, ctx, key)
        finally:
            await engine.stop()

    status = asyncio.run(go())
    assert status.phase == WorkflowStatusPhase.FAILED
    assert Catalog(ctx).list() == []
    with ctx.db.session() as s:
        assert s.query(CatalogReservation).count() == 0


def test_admin_shows_cache_status_and_catalog_key_on_node_executions(tmp_path):
    from tests.admin.execution_harness import Harness

    harness = Harness(tmp_path)
    harness.ctx.clock = ManualClock()
    try:
        plugin = InProcessPlugin({"cached_double": lambda i, a: {"o0": 2 * i["x"]}})
        plugin.task_types = ("python-task",)
        plugins = registry(plugin)
        harness.register(double_wf)
        name = "tests.propeller.nodes.task.test_cache.double_wf"
        ids = []

        async def go():
            engine = Engine(harness.ctx, harness.sink, plugins=plugins, handlers=default_handlers(plugins),
                            clients=harness.clients)
            await engine.start()
            try:
                for note in ("n", "m"):
                    exec_id = harness.create(name, {"x": 8, "note": note})
                    ids.append(exec_id)
                    await h.run_to_completion(engine, harness.ctx, (exec_id.project, exec_id.domain, exec_id.name))
            finally:
                await engine.stop()

        asyncio.run(go())
        nodes = []
        for exec_id in ids:
            node_id = idpb.NodeExecutionIdentifier(execution_id=exec_id, node_id="n0")
            got = harness.svc.GetNodeExecution(node_execution_pb2.NodeExecutionGetRequest(id=node_id))
            listed = harness.svc.ListNodeExecutions(node_execution_pb2.NodeExecutionListRequest(
                workflow_execution_id=exec_id, limit=10))
            assert [n for n in listed.node_executions if n.id.node_id == "n0"][0].closure == got.closure
            tasks = harness.svc.ListTaskExecutions(task_execution_pb2.TaskExecutionListRequest(
                node_execution_id=node_id, limit=10))
            nodes.append((got, len(tasks.task_executions)))
        (first, first_tasks), (second, second_tasks) = nodes
        assert first.closure.task_node_metadata.cache_status == POPULATED and first_tasks == 1
        assert second.closure.task_node_metadata.cache_status == HIT and second_tasks == 0
        assert second.closure.phase == 3
        key = second.closure.task_node_metadata.catalog_key
        assert key.dataset_id.resource_type == idpb.DATASET
        assert key.dataset_id.name == "flyte_task-" + "tests.propeller.nodes.task.test_cache.cached_double"
        assert key.source_task_execution.node_execution_id.execution_id.name == ids[0].name
    finally:
        harness.close()


def test_cached_task_without_cache_version_fails_the_node_saying_so(tmp_path):
    ctx = h.make_context(tmp_path)
    plugin = InProcessPlugin({"cached_double": lambda i, a: {"o0": 2 * i["x"]}})
    plugins = registry(plugin)
    sink = h.RecordingSink()

    async def go():
        engine = Engine(ctx, sink, plugins=plugins, handlers=default_handlers(plugins))
        await engine.start()
        try:
            key = h.create_execution(ctx, compiled(double_wf, cache_version=""), {"x": 1, "note": ""}, "noversion")
            return await h.run_to_completion(engine, ctx, key)
        finally:
            await engine.stop()

    status = asyncio.run(go())
    assert status.phase == WorkflowStatusPhase.FAILED and plugin.calls == []
    error = status.nodes["n0"].error
    assert error.code == "CacheKeyError" and "has no cache_version" in error.message
