"""The engine running against a real in-process admin (tests.admin.execution_harness.Harness), tasks in-process.

Used by tests of node kinds that talk to admin through the engine's clients (admin_clients): launch-plan
nodes create child executions through admin's launch path, gates create and read signals, recovery
reads admin's node executions.
"""

from __future__ import annotations

import asyncio

from flyteidl.admin import execution_pb2, node_execution_pb2
from sqlalchemy import select

from flytelite.idl.times import Clock
from flytelite.propeller.engine import Engine
from flytelite.propeller.nodes.registry import default_handlers
from flytelite.store.executions import execution_identifier
from flytelite.store.models import Execution
from tests.admin.execution_harness import Harness, values_of
from tests.propeller import harness as h
from tests.propeller.inprocess import InProcessPlugin, registry


class PythonTasksInProcess(InProcessPlugin):
    """Runs flytekit's python-task templates as the in-process functions named like them."""

    task_types = ("python-task",)


def make_admin(tmp_path) -> Harness:
    harness = Harness(tmp_path)
    harness.ctx.clock = Clock()
    return harness


def run_with_engine(admin: Harness, body, plugin: InProcessPlugin) -> Engine:
    """Run the engine while `await body(engine)` runs; admin's wake-ups go to this engine."""
    plugins = registry(plugin)

    async def go():
        engine = Engine(admin.ctx, admin.sink, plugins=plugins, handlers=default_handlers(plugins),
                        clients=admin.clients)
        admin.ctx.notify_engine = engine.notify
        await engine.start()
        try:
            for key in admin.notified:
                engine.notify(key)
            await body(engine)
        finally:
            await engine.stop()
            admin.ctx.notify_engine = admin.notified.append
            admin.notified.clear()
        return engine

    return asyncio.run(go())


def key_of(exec_id) -> tuple[str, str, str]:
    return (exec_id.project, exec_id.domain, exec_id.name)


async def wait_done(admin: Harness, exec_id, timeout: float = 30) -> None:
    await h.wait_for(lambda: h.load(admin.ctx, key_of(exec_id))[0].done, timeout)


def nodes_of(admin: Harness, exec_id) -> dict:
    listed = admin.svc.ListNodeExecutions(node_execution_pb2.NodeExecutionListRequest(
        workflow_execution_id=exec_id, limit=100))
    return {n.id.node_id: n for n in listed.node_executions}


def outputs_of(admin: Harness, exec_id) -> dict:
    data = admin.svc.GetExecutionData(execution_pb2.WorkflowExecutionGetDataRequest(id=exec_id))
    return values_of(data.full_outputs)


def children_of(admin: Harness, exec_id) -> list[execution_pb2.Execution]:
    """Child executions whose parent node execution belongs to `exec_id`."""
    with admin.ctx.db.session() as s:
        rows = s.scalars(select(Execution).where(Execution.parent_node_execution_id.is_not(None))).all()
        ids = [execution_identifier(r) for r in rows]
    children = [admin.get(i) for i in ids]
    return [c for c in children if c.spec.metadata.parent_node_execution.execution_id.name == exec_id.name]
