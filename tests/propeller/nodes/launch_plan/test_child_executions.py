"""Launch-plan nodes (child executions) and RecoverExecution on the real engine and admin.

Tasks run in-process and count their runs, so a test can tell which nodes a recovery ran again.
"""

from __future__ import annotations

from collections import Counter

import pytest
from flyteidl.admin import execution_pb2
from flytekit import LaunchPlan, task, workflow

from flytelite import errors
from flytelite.admin.executions import recover_execution
from flytelite.idl.ids import execution_id
from flytelite.propeller.nodes.launch_plan import handler as lp
from tests.admin.execution_harness import NODE, WF
from tests.propeller import harness as h
from tests.propeller.admin_engine import (
    PythonTasksInProcess,
    children_of,
    make_admin,
    nodes_of,
    outputs_of,
    run_with_engine,
    wait_done,
)
from tests.propeller.inprocess import KEEP_RUNNING


@task
def lp_double(x: int) -> int:
    return x * 2


@task
def lp_flaky(x: int) -> int:
    return x + 100


@workflow
def lp_inner(x: int) -> int:
    return lp_flaky(x=lp_double(x=x))


lp_inner_plan = LaunchPlan.get_or_create(lp_inner, name="lp_inner_plan")


@workflow
def lp_outer(x: int) -> int:
    y = lp_double(x=x)
    z = lp_inner_plan(x=y)
    return lp_double(x=z)


class Tasks:
    """In-process task bodies that count their runs; lp_flaky fails while `broken` is set."""

    def __init__(self, broken: bool = False, hold: bool = False):
        self.runs: Counter = Counter()
        self.broken, self.hold = broken, hold

    def double(self, inputs, attempt):
        self.runs["lp_double"] += 1
        return {"o0": inputs["x"] * 2}

    def flaky(self, inputs, attempt):
        if self.hold:
            return KEEP_RUNNING
        self.runs["lp_flaky"] += 1
        if self.broken:
            raise ValueError("flaky is broken today")
        return {"o0": inputs["x"] + 100}

    def plugin(self) -> PythonTasksInProcess:
        return PythonTasksInProcess({"lp_double": self.double, "lp_flaky": self.flaky})


@pytest.fixture
def admin(tmp_path):
    harness = make_admin(tmp_path)
    yield harness
    harness.close()


def run(admin, exec_id, tasks: Tasks, body=None):
    run_with_engine(admin, body or (lambda engine: wait_done(admin, exec_id)), tasks.plugin())


def test_child_name_is_flytepropellers():
    # flytestdlib's own vector for FixedLengthUniqueIDForParts with fnv64a (parts joined with '-').
    saved = lp.MAX_CHILD_NAME_LENGTH
    lp.MAX_CHILD_NAME_LENGTH = 15
    try:
        assert lp.child_execution_name("x-y-z-m-n-y-z-m-n-y-z", "m", "n") == "fwp4bky2kucex5"
    finally:
        lp.MAX_CHILD_NAME_LENGTH = saved
    assert lp.child_execution_name("short", "n1", 0) == "short-n1-0"
    assert lp.child_execution_name("a" * 20, "n1", 0) == lp.child_execution_name("a" * 20, "n1", 0)
    assert lp.child_execution_name("a" * 20, "n1", 0) != lp.child_execution_name("a" * 20, "n1", 1)


def test_launch_plan_node_runs_a_linked_child_execution_and_takes_its_outputs(admin):
    admin.register(lp_outer)
    exec_id = admin.create(lp_outer.name, {"x": 3})
    tasks = Tasks()

    run(admin, exec_id, tasks)
    assert admin.get(exec_id).closure.phase == WF.SUCCEEDED, admin.get(exec_id).closure.error
    # 3 -> 6 -> child: 12 + 100 = 112 -> 224
    assert outputs_of(admin, exec_id) == {"o0": 224}
    (child,) = children_of(admin, exec_id)
    assert child.id.name == lp.child_execution_name(exec_id.name, "n1", 0)
    assert child.closure.phase == WF.SUCCEEDED
    assert child.spec.launch_plan.name == "lp_inner_plan"
    assert child.spec.metadata.nesting == 1
    assert child.spec.metadata.mode == execution_pb2.ExecutionMetadata.CHILD_WORKFLOW
    assert child.spec.metadata.parent_node_execution.node_id == "n1"
    node = nodes_of(admin, exec_id)["n1"]
    assert node.closure.phase == NODE.SUCCEEDED
    assert node.closure.workflow_node_metadata.executionId.name == child.id.name
    assert outputs_of(admin, child.id) == {"o0": 112}


def test_failed_child_fails_the_node_with_the_childs_error(admin):
    admin.register(lp_outer)
    exec_id = admin.create(lp_outer.name, {"x": 3})
    tasks = Tasks(broken=True)

    run(admin, exec_id, tasks)
    execution = admin.get(exec_id)
    assert execution.closure.phase == WF.FAILED
    assert "flaky is broken today" in execution.closure.error.message
    (child,) = children_of(admin, exec_id)
    assert child.closure.phase == WF.FAILED
    assert nodes_of(admin, exec_id)["n1"].closure.phase == NODE.FAILED


def test_terminating_the_parent_aborts_the_child(admin):
    admin.register(lp_outer)
    exec_id = admin.create(lp_outer.name, {"x": 3})
    tasks = Tasks(hold=True)

    async def body(engine):
        await h.wait_for(lambda: children_of(admin, exec_id), 30)
        child = children_of(admin, exec_id)[0]
        await h.wait_for(lambda: admin.get(child.id).closure.phase == WF.RUNNING, 30)
        admin.svc.TerminateExecution(execution_pb2.ExecutionTerminateRequest(id=exec_id, cause="stop it"))
        await wait_done(admin, exec_id)
        await wait_done(admin, child.id)

    run(admin, exec_id, tasks, body)
    assert admin.get(exec_id).closure.phase == WF.ABORTED
    (child,) = children_of(admin, exec_id)
    assert child.closure.phase == WF.ABORTED
    assert "cascading abort" in child.closure.abort_metadata.cause and "stop it" in child.closure.abort_metadata.cause


def test_recover_reruns_only_what_failed_including_inside_the_child(admin):
    admin.register(lp_outer)
    exec_id = admin.create(lp_outer.name, {"x": 3})
    tasks = Tasks(broken=True)
    run(admin, exec_id, tasks)
    assert admin.get(exec_id).closure.phase == WF.FAILED
    assert tasks.runs == {"lp_double": 2, "lp_flaky": 1}  # outer n0, child's n0, child's n1 (failed)

    recovered_id = recover_execution(admin.ctx, exec_id)
    fixed = Tasks()
    run(admin, recovered_id, fixed)
    recovered = admin.get(recovered_id)
    assert recovered.closure.phase == WF.SUCCEEDED, recovered.closure.error
    assert recovered.spec.metadata.mode == execution_pb2.ExecutionMetadata.RECOVERED
    assert recovered.spec.metadata.reference_execution.name == exec_id.name
    assert outputs_of(admin, recovered_id) == {"o0": 224}
    # Only the failed task (inside the child) and what came after it ran again.
    assert fixed.runs == {"lp_flaky": 1, "lp_double": 1}
    nodes = nodes_of(admin, recovered_id)
    assert nodes["n0"].closure.phase == NODE.RECOVERED
    assert nodes["n1"].closure.phase == NODE.SUCCEEDED and nodes["n2"].closure.phase == NODE.SUCCEEDED
    (child,) = children_of(admin, recovered_id)
    assert child.spec.metadata.mode == execution_pb2.ExecutionMetadata.RECOVERED
    assert nodes_of(admin, child.id)["n0"].closure.phase == NODE.RECOVERED


def test_recover_of_unknown_execution_is_not_found(admin):
    with pytest.raises(errors.NotFound):
        recover_execution(admin.ctx, execution_id("flytesnacks", "development", "nosuchexecution"))


def test_recovered_node_outputs_feed_downstream_nodes(admin):
    """A RECOVERED node counts as passed: its copied outputs bind into the next node's inputs."""
    admin.register(lp_outer)
    exec_id = admin.create(lp_outer.name, {"x": 5})
    run(admin, exec_id, Tasks(broken=True))
    recovered_id = recover_execution(admin.ctx, exec_id, name="recovered-five")
    assert recovered_id.name == "recovered-five"
    run(admin, recovered_id, Tasks())
    assert outputs_of(admin, recovered_id) == {"o0": 2 * (5 * 2 * 2 + 100)}
