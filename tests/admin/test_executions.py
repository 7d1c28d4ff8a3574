"""Workflow executions through the admin API in-process: creation rules, single-task executions, reads,
lists, terminate and relaunch, over a real SQLite file and blob folder."""

from __future__ import annotations

import re

import pytest
from flyteidl.admin import common_pb2, execution_pb2, launch_plan_pb2
from flyteidl.core import execution_pb2 as core
from flyteidl.core import identifier_pb2 as idpb
from flyteidl.core import literals_pb2

from flytelite import errors
from flytelite.store.flyteworkflow import ExecutionSpec as EngineSpec
from flytelite.store.models import FlyteWorkflow, NamedEntity
from tests.admin.execution_harness import NODE, T0, WF, D, Harness, P, greet, literal_map, values_of


@pytest.fixture
def h(tmp_path):
    harness = Harness(tmp_path)
    harness.register_all()
    yield harness
    harness.close()


def engine_row(h: Harness, exec_id) -> FlyteWorkflow:
    with h.ctx.db.session() as session:
        return session.get(FlyteWorkflow, (exec_id.project, exec_id.domain, exec_id.name))


def read_map(h: Harness, uri: str) -> dict:
    return values_of(h.ctx.blobs.read_proto(uri, literals_pb2.LiteralMap))


# -- creation ---------------------------------------------------------------------------------------------
def test_generated_name_defaults_and_engine_handoff(h):
    exec_id = h.create("tests.admin.execution_harness.pipeline")
    assert re.fullmatch(r"[a-z][a-z0-9]{19}", exec_id.name)
    assert (exec_id.project, exec_id.domain) == (P, D)
    assert h.notified == [(P, D, exec_id.name)]

    execution = h.get(exec_id)
    assert execution.spec.launch_plan.name == "tests.admin.execution_harness.pipeline"
    assert execution.spec.launch_plan.resource_type == idpb.LAUNCH_PLAN
    assert execution.spec.metadata.mode == execution_pb2.ExecutionMetadata.MANUAL
    assert execution.spec.metadata.principal == ""  # flytekit's "placeholder" is not an identity
    assert execution.closure.phase == WF.UNDEFINED
    assert execution.closure.created_at.seconds > 0
    assert execution.closure.workflow_id.name == "tests.admin.execution_harness.pipeline"
    assert execution.closure.workflow_id.resource_type == idpb.WORKFLOW

    # The default fills the gap; the user gave nothing.
    fw = engine_row(h, exec_id)
    spec = EngineSpec.from_json(fw.spec_json)
    assert read_map(h, spec.inputs_uri) == {"x": 3}
    assert spec.inputs_uri == h.ctx.blobs.join(h.ctx.blobs.execution_dir(P, D, exec_id.name), "inputs.pb")
    assert read_map(h, spec.inputs_uri.replace("inputs.pb", "user_inputs.pb")) == {}
    assert spec.raw_output_prefix == h.ctx.blobs.raw_output_prefix()
    assert spec.max_parallelism == 25
    assert spec.launch_plan == f"{P}/{D}/tests.admin.execution_harness.pipeline/v1"
    assert spec.workflow == f"{P}/{D}/tests.admin.execution_harness.pipeline/v1"
    compiled = fw.closure_pb
    wf = h.svc.GetWorkflow(common_pb2.ObjectGetRequest(id=execution.closure.workflow_id), None)
    assert compiled == wf.closure.compiled_workflow.SerializeToString()

    data = h.svc.GetExecutionData(execution_pb2.WorkflowExecutionGetDataRequest(id=exec_id))
    assert values_of(data.full_inputs) == {"x": 3}
    assert data.inputs.url == spec.inputs_uri and data.inputs.bytes > 0
    assert not data.full_outputs.literals and data.outputs.bytes == 0


def test_named_execution_and_already_exists(h):
    exec_id = h.create("tests.admin.execution_harness.pipeline", {"x": 7}, name="my-run-1")
    assert exec_id.name == "my-run-1"
    with pytest.raises(errors.AlreadyExists, match="my-run-1"):
        h.create("tests.admin.execution_harness.pipeline", {"x": 8}, name="my-run-1")
    # The first execution's inputs were not touched by the refused one.
    spec = EngineSpec.from_json(engine_row(h, exec_id).spec_json)
    assert read_map(h, spec.inputs_uri) == {"x": 7}
    with pytest.raises(errors.InvalidArgument, match="must start with a letter"):
        h.create("tests.admin.execution_harness.pipeline", name="1-bad")


def test_unknown_launch_plan_and_project(h):
    with pytest.raises(errors.NotFound, match="nope"):
        h.create("nope")
    with pytest.raises(errors.NotFound, match="other versions"):
        h.create("tests.admin.execution_harness.pipeline", version="v9")
    request = execution_pb2.ExecutionCreateRequest(project="no-such-project", domain=D, spec=execution_pb2.ExecutionSpec(
        launch_plan=idpb.Identifier(resource_type=idpb.LAUNCH_PLAN, project=P, domain=D, name="x", version="v1")))
    with pytest.raises((errors.NotFound, errors.InvalidArgument), match="no-such-project"):
        h.svc.CreateExecution(request)


def test_input_rules(h):
    # Fixed inputs cannot be overridden.
    with pytest.raises(errors.InvalidArgument, match=r"'x' is fixed"):
        h.create("pipeline_fixed", {"x": 1})
    fixed = h.create("pipeline_fixed")
    assert read_map(h, EngineSpec.from_json(engine_row(h, fixed).spec_json).inputs_uri) == {"x": 4}
    # Unknown input names are refused, naming them.
    with pytest.raises(errors.InvalidArgument, match="no input named 'y'"):
        h.create("tests.admin.execution_harness.pipeline", {"y": 1})
    # A required input nobody gave is named.
    with pytest.raises(errors.InvalidArgument, match="requires input.* b"):
        h.create("tests.admin.execution_harness.add_wf", {"a": 1})
    # Wrong types are refused with both types.
    with pytest.raises(errors.InvalidArgument, match="'a'.*wrong type.*expected.*got"):
        h.create("tests.admin.execution_harness.add_wf", {"a": "one", "b": "x"})
    ok = h.create("tests.admin.execution_harness.add_wf", {"a": 1, "b": "x"})
    assert read_map(h, EngineSpec.from_json(engine_row(h, ok).spec_json).inputs_uri) == {"a": 1, "b": "x"}


def test_deprecated_spec_inputs_are_accepted(h):
    spec = execution_pb2.ExecutionSpec(
        launch_plan=idpb.Identifier(resource_type=idpb.LAUNCH_PLAN, project=P, domain=D,
                                    name="tests.admin.execution_harness.add_wf", version="v1"),
        inputs=literal_map({"a": 2, "b": "old"}))
    exec_id = h.svc.CreateExecution(execution_pb2.ExecutionCreateRequest(project=P, domain=D, spec=spec)).id
    data = h.svc.GetExecutionData(execution_pb2.WorkflowExecutionGetDataRequest(id=exec_id))
    assert values_of(data.full_inputs) == {"a": 2, "b": "old"}
    # The stored spec does not carry the inputs a second time.
    assert not h.get(exec_id).spec.inputs.literals


def test_execution_settings_reach_the_engine(h):
    exec_id = h.create(
        "tests.admin.execution_harness.pipeline", {"x": 1},
        max_parallelism=3, raw_output_data_config=common_pb2.RawOutputDataConfig(output_location_prefix="/tmp/raw"),
        envs=common_pb2.Envs(values=[{"key": "A", "value": "1"}]), labels=common_pb2.Labels(values={"team": "ml"}),
        overwrite_cache=True,
    )
    spec = EngineSpec.from_json(engine_row(h, exec_id).spec_json)
    assert (spec.max_parallelism, spec.raw_output_prefix, spec.envs, spec.labels, spec.overwrite_cache) == (
        3, "/tmp/raw", {"A": "1"}, {"team": "ml"}, True)
    assert spec.interruptible is None
    assert h.get(exec_id).spec.max_parallelism == 3


def test_single_task_execution_synthesises_flytegen_workflow(h):
    task_name = greet.name
    exec_id = h.create(task_name, {"name": "task"}, resource_type=idpb.TASK)
    execution = h.get(exec_id)
    # The execution still names the task it ran, which is how flytekit recognises single-task runs.
    assert execution.spec.launch_plan.resource_type == idpb.TASK
    assert execution.spec.launch_plan.name == task_name
    gen = f".flytegen.{task_name}"
    assert execution.closure.workflow_id.name == gen

    wf_id = idpb.Identifier(resource_type=idpb.WORKFLOW, project=P, domain=D, name=gen, version="v1")
    wf = h.svc.GetWorkflow(common_pb2.ObjectGetRequest(id=wf_id), None)
    template = wf.closure.compiled_workflow.primary.template
    node_ids = [n.id for n in template.nodes if n.id not in ("start-node", "end-node")]
    assert node_ids == ["testsadminexecutionharnessgreet"]
    assert [t.template.id.name for t in wf.closure.compiled_workflow.tasks] == [task_name]
    assert list(template.interface.inputs.variables) == ["name"]
    assert [o.binding.promise.node_id for o in template.outputs] == ["testsadminexecutionharnessgreet"]
    lp = h.svc.GetLaunchPlan(common_pb2.ObjectGetRequest(id=idpb.Identifier(
        resource_type=idpb.LAUNCH_PLAN, project=P, domain=D, name=gen, version="v1")), None)
    assert lp.spec.workflow_id.name == gen
    assert lp.closure.expected_inputs.parameters["name"].required
    with h.ctx.db.session() as session:
        states = {r.resource_type: r.state for r in session.query(NamedEntity).filter_by(name=gen)}
    assert states == {idpb.WORKFLOW: common_pb2.SYSTEM_GENERATED, idpb.LAUNCH_PLAN: common_pb2.SYSTEM_GENERATED}
    assert engine_row(h, exec_id).closure_pb == wf.closure.compiled_workflow.SerializeToString()

    # A second run of the same task version reuses the generated entities; inputs are still checked.
    again = h.create(task_name, {"name": "again"}, resource_type=idpb.TASK)
    assert h.get(again).closure.workflow_id == execution.closure.workflow_id
    with pytest.raises(errors.InvalidArgument, match="requires input.* name"):
        h.create(task_name, {}, resource_type=idpb.TASK)
    with pytest.raises(errors.NotFound, match="no_such_task"):
        h.create("no_such_task", {}, resource_type=idpb.TASK)


# -- lists ---------------------------------------------------------------------------------------------------
def list_names(h: Harness, filters: str = "", limit: int = 100, token: str = "", sort=None) -> tuple[list, str]:
    request = common_pb2.ResourceListRequest(id=common_pb2.NamedEntityIdentifier(project=P, domain=D),
                                             filters=filters, limit=limit, token=token, sort_by=sort)
    response = h.svc.ListExecutions(request)
    return [e.id.name for e in response.executions], response.token


def test_list_executions_filters_sort_and_pages(h):
    h.clock.current = T0
    a = h.create("tests.admin.execution_harness.pipeline", name="a-run")
    h.clock.current = T0.replace(minute=1)
    b = h.create("pipeline_fixed", name="b-run")
    h.clock.current = T0.replace(minute=2)
    h.create("tests.admin.execution_harness.add_wf", {"a": 1, "b": "x"}, name="c-run")
    h.workflow_event(a, WF.RUNNING, 1)
    h.workflow_event(a, WF.SUCCEEDED, 2)

    assert list_names(h)[0] == ["c-run", "b-run", "a-run"]  # newest first
    assert list_names(h, sort=common_pb2.Sort(key="created_at", direction=common_pb2.Sort.ASCENDING))[0] == [
        "a-run", "b-run", "c-run"]
    assert list_names(h, "eq(phase,SUCCEEDED)")[0] == ["a-run"]
    assert list_names(h, "value_in(execution.phase,UNDEFINED;RUNNING)")[0] == ["c-run", "b-run"]
    assert list_names(h, "eq(launch_plan.name,pipeline_fixed)")[0] == ["b-run"]
    assert list_names(h, "eq(workflow.name,tests.admin.execution_harness.pipeline)")[0] == ["b-run", "a-run"]
    assert list_names(h, "gte(execution_created_at,2024-05-01T12:01:00Z)+lt(created_at,2024-05-01T12:02:00Z)")[0] \
        == ["b-run"]
    assert list_names(h, "eq(mode,MANUAL)")[0] == ["c-run", "b-run", "a-run"]
    first, token = list_names(h, limit=2)
    second, last = list_names(h, limit=2, token=token)
    assert (first, second, last) == (["c-run", "b-run"], ["a-run"], "")
    with pytest.raises(errors.InvalidArgument, match="cannot filter"):
        list_names(h, "eq(colour,red)")

    # Archived executions leave the default list.
    h.svc.UpdateExecution(execution_pb2.ExecutionUpdateRequest(id=b, state=execution_pb2.EXECUTION_ARCHIVED))
    assert list_names(h)[0] == ["c-run", "a-run"]
    assert list_names(h, "eq(state,EXECUTION_ARCHIVED)")[0] == ["b-run"]

    # Labels and tags filter as execution tags: one tag row must match the key and the value together.
    h.create("pipeline_fixed", name="eager-child", labels=common_pb2.Labels(values={"eager-exec": "parent1"}),
             tags=["nightly"])
    h.create("pipeline_fixed", name="other-child", labels=common_pb2.Labels(values={"eager-exec": "parent2",
                                                                                    "team": "parent1"}))
    eager = "value_in(execution_tag.key,eager-exec)+value_in(execution_tag.value,parent1)"
    assert list_names(h, eager)[0] == ["eager-child"]
    assert list_names(h, eager + "+value_in(phase,UNDEFINED;QUEUED;RUNNING)")[0] == ["eager-child"]
    assert list_names(h, "eq(execution_tag.key,nightly)")[0] == ["eager-child"]
    assert sorted(list_names(h, "eq(execution_tag.value,parent1)")[0]) == ["eager-child", "other-child"]
    assert h.get(b).closure.state_change_details.state == execution_pb2.EXECUTION_ARCHIVED


# -- terminate and relaunch ------------------------------------------------------------------------------
def test_terminate_records_abort_and_waits_for_the_engine(h):
    exec_id = h.create("tests.admin.execution_harness.pipeline", {"x": 2})
    h.workflow_event(exec_id, WF.RUNNING, 1)
    h.notified.clear()
    h.svc.TerminateExecution(execution_pb2.ExecutionTerminateRequest(id=exec_id, cause="user says stop"))
    assert h.notified == [(P, D, exec_id.name)]
    assert engine_row(h, exec_id).abort_cause == "user says stop"
    execution = h.get(exec_id)
    assert execution.closure.phase == WF.ABORTING
    assert execution.closure.abort_metadata.cause == "user says stop"
    # A late non-terminal event cannot undo the abort; the engine's ABORTED settles it.
    h.workflow_event(exec_id, WF.RUNNING, 2)
    assert h.get(exec_id).closure.phase == WF.ABORTING
    h.workflow_event(exec_id, WF.ABORTED, 3)
    execution = h.get(exec_id)
    assert execution.closure.phase == WF.ABORTED
    assert execution.closure.abort_metadata.cause == "user says stop"
    assert execution.closure.duration.seconds == 2
    with pytest.raises(errors.FailedPrecondition, match="already finished"):
        h.svc.TerminateExecution(execution_pb2.ExecutionTerminateRequest(id=exec_id, cause="again"))
    with pytest.raises(errors.NotFound):
        h.svc.TerminateExecution(execution_pb2.ExecutionTerminateRequest(
            id=idpb.WorkflowExecutionIdentifier(project=P, domain=D, name="missing"), cause="x"))


def test_relaunch_reuses_user_inputs(h):
    original = h.create("tests.admin.execution_harness.add_wf", {"a": 5, "b": "again"}, name="orig")
    response = h.svc.RelaunchExecution(execution_pb2.ExecutionRelaunchRequest(id=original, name="relaunched"))
    assert response.id.name == "relaunched"
    relaunched = h.get(response.id)
    assert relaunched.spec.metadata.mode == execution_pb2.ExecutionMetadata.RELAUNCH
    assert relaunched.spec.metadata.reference_execution.name == "orig"
    data = h.svc.GetExecutionData(execution_pb2.WorkflowExecutionGetDataRequest(id=response.id))
    assert values_of(data.full_inputs) == {"a": 5, "b": "again"}
    generated = h.svc.RelaunchExecution(execution_pb2.ExecutionRelaunchRequest(id=original)).id
    assert generated.name != "orig" and h.get(generated).spec.metadata.mode == execution_pb2.ExecutionMetadata.RELAUNCH


def test_outputs_and_errors_are_readable(h):
    ok = h.create("tests.admin.execution_harness.pipeline", {"x": 1})
    out = h.write_literals(h.ctx.blobs.join(h.ctx.blobs.execution_dir(P, D, ok.name), "end-node", "outputs.pb"),
                           {"o0": 4})
    h.workflow_event(ok, WF.RUNNING, 1)
    h.workflow_event(ok, WF.SUCCEEDING, 2)
    h.workflow_event(ok, WF.SUCCEEDED, 3.5, output_uri=out)
    execution = h.get(ok)
    assert execution.closure.outputs.uri == out
    assert execution.closure.started_at.seconds > 0 and execution.closure.duration.ToTimedelta().total_seconds() == 2.5
    data = h.svc.GetExecutionData(execution_pb2.WorkflowExecutionGetDataRequest(id=ok))
    assert values_of(data.full_outputs) == {"o0": 4} and data.outputs.url == out

    bad = h.create("tests.admin.execution_harness.pipeline", {"x": 1})
    h.workflow_event(bad, WF.RUNNING, 1)
    h.workflow_event(bad, WF.FAILED, 2, error=core.ExecutionError(code="USER:Boom", message="x" * 300,
                                                                 kind=core.ExecutionError.USER))
    assert h.get(bad).closure.error.message == "x" * 300
    listed = h.svc.ListExecutions(common_pb2.ResourceListRequest(
        id=common_pb2.NamedEntityIdentifier(project=P, domain=D), filters="eq(phase,FAILED)"))
    assert len(listed.executions[0].closure.error.message) == 100  # lists trim, as FlyteAdmin does
    assert h.svc.ListExecutions(common_pb2.ResourceListRequest(
        id=common_pb2.NamedEntityIdentifier(project=P, domain=D), filters="eq(error_kind,USER)")).executions


def test_generated_entities_are_not_user_registrations(h):
    """Running a task does not stop the user from registering a workflow of the task's own name."""
    h.create(greet.name, {"name": "x"}, resource_type=idpb.TASK)
    names = h.svc.ListWorkflowIds(common_pb2.NamedEntityIdentifierListRequest(project=P, domain=D, limit=100), None)
    assert f".flytegen.{greet.name}" in [e.name for e in names.entities]
    lps = h.svc.ListLaunchPlans(common_pb2.ResourceListRequest(
        id=common_pb2.NamedEntityIdentifier(project=P, domain=D, name=f".flytegen.{greet.name}"), limit=10), None)
    assert [lp.closure.state for lp in lps.launch_plans] == [launch_plan_pb2.INACTIVE]


def test_child_execution_links_to_its_parent_node(h):
    """A launch-plan node's child execution (as the engine launches it) points at the parent node execution."""
    from flytelite.store.models import Execution

    parent = h.create("tests.admin.execution_harness.pipeline", {"x": 1}, name="parent-run")
    parent_node = idpb.NodeExecutionIdentifier(execution_id=parent, node_id="n0")
    with pytest.raises(errors.NotFound, match="n0"):
        h.create("pipeline_fixed", name="child-run", metadata=execution_pb2.ExecutionMetadata(
            mode=execution_pb2.ExecutionMetadata.CHILD_WORKFLOW, parent_node_execution=parent_node))
    h.node_event(parent, "n0", NODE.RUNNING, 1)
    child = h.create("pipeline_fixed", name="child-run", metadata=execution_pb2.ExecutionMetadata(
        mode=execution_pb2.ExecutionMetadata.CHILD_WORKFLOW, parent_node_execution=parent_node))
    spec = EngineSpec.from_json(engine_row(h, child).spec_json)
    assert (spec.parent_execution, spec.parent_node_id) == ("parent-run", "n0")
    assert h.get(child).spec.metadata.mode == execution_pb2.ExecutionMetadata.CHILD_WORKFLOW
    with h.ctx.db.session() as session:
        assert session.get(Execution, (P, D, "child-run")).parent_node_execution_id is not None
