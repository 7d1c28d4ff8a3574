"""Array nodes over launch plans and subworkflows (flytekit's `array_node(launch_plan, ...)`), on the real engine
and admin, tasks in-process.

Each item of a launch plan is a child execution named after the item, under the array node's execution; the
array's outputs gather the children's, and the array's concurrency and success criteria hold as for map tasks.
flytekit maps only launch plans; an array of subworkflows is the same workflow with its sub-node edited to
reference the launch plan's workflow inline, as FlytePropeller's handler runs any node kind.
"""

from __future__ import annotations

import pytest
from flyteidl.admin import execution_pb2, task_execution_pb2
from flyteidl.core import execution_pb2 as core_exec
from flyteidl.core import identifier_pb2
from flytekit import LaunchPlan, task, workflow
from flytekit.core.array_node import array_node

from flytelite.propeller.nodes.launch_plan import handler as lp
from tests.admin.execution_harness import NODE, WF, literal
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

TASK = core_exec.TaskExecution.Phase


@task
def arr_square(x: int, offset: int) -> int:
    return x * x + offset


@workflow
def arr_item_wf(x: int, offset: int = 0) -> int:
    return arr_square(x=x, offset=offset)


arr_item_lp = LaunchPlan.get_or_create(arr_item_wf, name="arr_item_lp", fixed_inputs={"offset": 100})


@workflow
def arr_lp_wf(xs: list[int]) -> list[int]:
    return array_node(arr_item_lp, concurrency=1)(x=xs)


@workflow
def arr_lp_ratio_wf(xs: list[int]) -> list[int | None]:
    return array_node(arr_item_lp, min_success_ratio=0.5)(x=xs)


def square(inputs, attempt):
    if inputs["x"] < 0:
        raise ValueError(f"negative {inputs['x']}")
    return {"o0": inputs["x"] ** 2 + inputs["offset"]}


def plugin(body=square) -> PythonTasksInProcess:
    return PythonTasksInProcess({"arr_square": body})


@pytest.fixture
def admin(tmp_path):
    harness = make_admin(tmp_path)
    yield harness
    harness.close()


def run(admin, exec_id, body=None, tasks=None):
    run_with_engine(admin, body or (lambda engine: wait_done(admin, exec_id)), tasks or plugin())


def array_task_execution(admin, exec_id):
    """The array node's one task execution (its items are its external resources)."""
    listed = admin.svc.ListTaskExecutions(task_execution_pb2.TaskExecutionListRequest(
        node_execution_id=identifier_pb2.NodeExecutionIdentifier(execution_id=exec_id, node_id="n0"), limit=10))
    (attempt,) = listed.task_executions
    return attempt


def test_an_array_of_a_launch_plan_runs_one_child_per_item_one_at_a_time_and_gathers_their_outputs(admin):
    admin.register(arr_lp_wf)
    exec_id = admin.create(arr_lp_wf.name, {"xs": [1, 2, 3]})

    run(admin, exec_id)
    execution = admin.get(exec_id)
    assert execution.closure.phase == WF.SUCCEEDED, execution.closure.error
    assert outputs_of(admin, exec_id) == {"o0": [101, 104, 109]}  # the plan's fixed offset reached each child
    children = sorted(children_of(admin, exec_id), key=lambda c: c.id.name)
    assert sorted(c.id.name for c in children) == sorted(
        lp.child_execution_name(exec_id.name, f"n0-n{i}", 0) for i in range(3))
    for child in children:
        assert child.spec.launch_plan.name == "arr_item_lp"
        assert child.spec.metadata.parent_node_execution.node_id == "n0"
        assert child.spec.metadata.mode == execution_pb2.ExecutionMetadata.CHILD_WORKFLOW
        assert child.closure.phase == WF.SUCCEEDED
    # Concurrency 1: each child was created only once the one before it had finished.
    by_item = [next(c for c in children if c.id.name == lp.child_execution_name(exec_id.name, f"n0-n{i}", 0))
               for i in range(3)]
    for before, after in zip(by_item, by_item[1:], strict=False):
        assert after.closure.created_at.ToDatetime() >= before.closure.updated_at.ToDatetime()
    node = nodes_of(admin, exec_id)["n0"]
    assert node.closure.phase == NODE.SUCCEEDED and node.metadata.is_array
    resources = array_task_execution(admin, exec_id).closure.metadata.external_resources
    assert [(r.index, r.phase, r.external_id) for r in resources] == [
        (i, TASK.SUCCEEDED, c.id.name) for i, c in enumerate(by_item)]


def test_failed_children_are_none_while_enough_succeed_and_fail_the_array_when_too_many_fail(admin):
    admin.register(arr_lp_ratio_wf)
    enough = admin.create(arr_lp_ratio_wf.name, {"xs": [1, -2, 3, -4]})
    run(admin, enough)
    assert admin.get(enough).closure.phase == WF.SUCCEEDED, admin.get(enough).closure.error
    assert outputs_of(admin, enough) == {"o0": [101, None, 109, None]}
    assert sorted(c.closure.phase for c in children_of(admin, enough)) == [WF.SUCCEEDED] * 2 + [WF.FAILED] * 2

    too_many = admin.create(arr_lp_ratio_wf.name, {"xs": [1, -2, -3, -4]})
    run(admin, too_many)
    execution = admin.get(too_many)
    assert execution.closure.phase == WF.FAILED
    assert "of 4 items of array node n0 failed, and at least 2 must succeed" in execution.closure.error.message
    assert "negative -2" in execution.closure.error.message


def test_terminating_the_parent_aborts_the_running_children(admin):
    admin.register(arr_lp_ratio_wf)
    exec_id = admin.create(arr_lp_ratio_wf.name, {"xs": [1, 2]})

    async def body(engine):
        await h.wait_for(lambda: len(children_of(admin, exec_id)) == 2, 30)
        admin.svc.TerminateExecution(execution_pb2.ExecutionTerminateRequest(id=exec_id, cause="enough"))
        await wait_done(admin, exec_id)
        for child in children_of(admin, exec_id):
            await wait_done(admin, child.id)

    run(admin, exec_id, body, plugin(lambda inputs, attempt: KEEP_RUNNING))
    assert admin.get(exec_id).closure.phase == WF.ABORTED
    children = children_of(admin, exec_id)
    assert [c.closure.phase for c in children] == [WF.ABORTED, WF.ABORTED]
    assert all("enough" in c.closure.abort_metadata.cause for c in children)


def inline_the_launch_plans_workflow(spec, specs) -> None:
    """Make the array's sub-node run the launch plan's workflow as a subworkflow of the closure, its `offset`
    (which the plan fixed) bound whole to every item: 5."""
    if spec.template.id.name != arr_lp_ratio_wf.name:
        return
    item_wf = next(s for s in specs if getattr(s, "template", None) is not None
                   and s.template.id.name == arr_item_wf.name)
    node = next(n for n in spec.template.nodes if n.HasField("array_node"))
    node.array_node.node.workflow_node.sub_workflow_ref.CopyFrom(item_wf.template.id)
    spec.sub_workflows.add().CopyFrom(item_wf.template)
    node.array_node.bound_inputs.append("offset")
    offset = node.inputs.add(var="offset")
    offset.binding.scalar.CopyFrom(literal(5).scalar)


def test_an_array_of_a_subworkflow_runs_each_item_in_its_own_scope(admin):
    admin.register(arr_lp_ratio_wf, edit=inline_the_launch_plans_workflow)
    exec_id = admin.create(arr_lp_ratio_wf.name, {"xs": [2, -1, 3]})

    run(admin, exec_id)
    execution = admin.get(exec_id)
    assert execution.closure.phase == WF.SUCCEEDED, execution.closure.error
    assert outputs_of(admin, exec_id) == {"o0": [9, None, 14]}
    assert children_of(admin, exec_id) == []
    resources = array_task_execution(admin, exec_id).closure.metadata.external_resources
    assert [(r.index, r.phase) for r in resources] == [(0, TASK.SUCCEEDED), (1, TASK.FAILED), (2, TASK.SUCCEEDED)]
