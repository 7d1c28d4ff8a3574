"""The engine reporting to admin's real EventSink: what FlyteRemote reads back is what the engine did."""

from __future__ import annotations

import asyncio

import pytest
from flyteidl.admin import execution_pb2, node_execution_pb2, task_execution_pb2
from flyteidl.core import identifier_pb2 as idpb

from flytelite.idl.times import Clock
from flytelite.propeller.engine import Engine
from tests.admin.execution_harness import WF, Harness, values_of
from tests.propeller import flyte_tasks as ft
from tests.propeller import harness as h


@pytest.fixture
def admin(tmp_path, monkeypatch):
    # The task module is imported by the task process from the repository.
    monkeypatch.setenv("PYTHONPATH", str(h.REPO))
    harness = Harness(tmp_path)
    harness.ctx.clock = Clock()
    yield harness
    harness.close()


def run_engine(harness, exec_id, during=None):
    key = (exec_id.project, exec_id.domain, exec_id.name)

    async def go():
        engine = Engine(harness.ctx, harness.sink, clients=harness.clients)
        await engine.start()
        try:
            for notified in harness.notified:
                engine.notify(notified)
            if during is not None:
                await during(engine)
            await h.wait_for(lambda: h.load(harness.ctx, key)[0].done, 90)
        finally:
            await engine.stop()

    asyncio.run(go())


def test_successful_run_as_admin_reports_it(admin):
    admin.register(ft.add_then_square)
    exec_id = admin.create("tests.propeller.flyte_tasks.add_then_square", {"a": 4, "b": 1})
    run_engine(admin, exec_id)
    execution = admin.get(exec_id)
    assert execution.closure.phase == WF.SUCCEEDED
    data = admin.svc.GetExecutionData(execution_pb2.WorkflowExecutionGetDataRequest(id=exec_id))
    assert values_of(data.full_outputs) == {"o0": 25}
    nodes = admin.svc.ListNodeExecutions(node_execution_pb2.NodeExecutionListRequest(workflow_execution_id=exec_id,
                                                                                     limit=100))
    by_id = {n.id.node_id: n for n in nodes.node_executions}
    assert {"n0", "n1"} <= set(by_id)
    assert by_id["n1"].metadata.spec_node_id == "n1"
    tasks = admin.svc.ListTaskExecutions(task_execution_pb2.TaskExecutionListRequest(
        node_execution_id=idpb.NodeExecutionIdentifier(node_id="n0", execution_id=exec_id), limit=10))
    assert len(tasks.task_executions) == 1
    te = tasks.task_executions[0]
    assert te.closure.logs[0].uri.endswith("/logs/flytesnacks-development-" + exec_id.name + "/n0-0.log")
    assert te.closure.phase == 3  # SUCCEEDED


def test_user_error_as_admin_reports_it(admin):
    admin.register(ft.failing_wf)
    exec_id = admin.create("tests.propeller.flyte_tasks.failing_wf", {"x": 9})
    run_engine(admin, exec_id)
    execution = admin.get(exec_id)
    assert execution.closure.phase == WF.FAILED
    assert "x must be negative, got 9" in execution.closure.error.message


def test_terminate_through_admin_aborts(admin, tmp_path):
    admin.register(ft.restart_wf)
    marks = tmp_path / "marks"
    exec_id = admin.create("tests.propeller.flyte_tasks.restart_wf", {"marker_dir": str(marks), "seconds": 60.0})

    async def terminate(engine):
        await h.wait_for(lambda: (marks / "sleep_then").exists())
        admin.svc.TerminateExecution(execution_pb2.ExecutionTerminateRequest(id=exec_id, cause="enough"))
        engine.notify((exec_id.project, exec_id.domain, exec_id.name))

    run_engine(admin, exec_id, during=terminate)
    assert admin.get(exec_id).closure.phase == WF.ABORTED
