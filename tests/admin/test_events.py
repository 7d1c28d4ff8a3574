"""The EventSink: propeller's workflow, node and task events applied to execution rows, then read back through
the node/task execution API in-process and by flytekit's FlyteRemote over a real gRPC server."""

from __future__ import annotations

from concurrent import futures

import grpc
import pytest
from flyteidl.admin import common_pb2, execution_pb2, node_execution_pb2, task_execution_pb2
from flyteidl.core import catalog_pb2, compiler_pb2
from flyteidl.core import execution_pb2 as core
from flyteidl.core import identifier_pb2 as idpb
from flyteidl.service import admin_pb2_grpc
from google.protobuf import struct_pb2

from flytelite import errors
from flytelite.admin.grpc_errors import ErrorInterceptor
from tests.admin.execution_harness import NODE, TASK, WF, D, Harness, P, double, literal_map, values_of

PIPELINE = "tests.admin.execution_harness.pipeline"


@pytest.fixture
def h(tmp_path):
    harness = Harness(tmp_path)
    harness.register_all()
    yield harness
    harness.close()


def node_id(exec_id, node: str) -> idpb.NodeExecutionIdentifier:
    return idpb.NodeExecutionIdentifier(execution_id=exec_id, node_id=node)


def get_node(h, exec_id, node: str) -> node_execution_pb2.NodeExecution:
    return h.svc.GetNodeExecution(node_execution_pb2.NodeExecutionGetRequest(id=node_id(exec_id, node)))


def list_nodes(h, exec_id, parent: str = "", **kw) -> list[str]:
    response = h.svc.ListNodeExecutions(node_execution_pb2.NodeExecutionListRequest(
        workflow_execution_id=exec_id, unique_parent_id=parent, limit=100, **kw))
    return [n.id.node_id for n in response.node_executions]


def attempt_id(exec_id, node: str, attempt: int) -> idpb.TaskExecutionIdentifier:
    return idpb.TaskExecutionIdentifier(
        task_id=idpb.Identifier(resource_type=idpb.TASK, project=P, domain=D, name=double.name, version="v1"),
        node_execution_id=node_id(exec_id, node), retry_attempt=attempt)


def data_path(h, exec_id, *parts: str) -> str:
    return h.ctx.blobs.join(h.ctx.blobs.execution_dir(P, D, exec_id.name), *parts)


def test_workflow_events_and_stale_ones(h):
    exec_id = h.create(PIPELINE, {"x": 1})
    h.workflow_event(exec_id, WF.RUNNING, 10)
    h.workflow_event(exec_id, WF.QUEUED, 11)  # cannot go back from RUNNING
    assert h.get(exec_id).closure.phase == WF.RUNNING
    h.workflow_event(exec_id, WF.RUNNING, 12)  # repeated: ignored, started_at stays
    out = h.write_literals(data_path(h, exec_id, "end-node", "outputs.pb"), {"o0": 4})
    h.workflow_event(exec_id, WF.SUCCEEDED, 15, output_uri=out)
    h.workflow_event(exec_id, WF.FAILED, 16, error=core.ExecutionError(message="late"))  # after terminal
    h.workflow_event(exec_id, WF.RUNNING, 17)
    closure = h.get(exec_id).closure
    assert closure.phase == WF.SUCCEEDED
    assert closure.duration.ToTimedelta().total_seconds() == 5
    assert closure.outputs.uri == out and not closure.HasField("error")
    assert closure.updated_at == h.get(exec_id).closure.updated_at and closure.updated_at.seconds > closure.started_at.seconds

    ghost = idpb.WorkflowExecutionIdentifier(project=P, domain=D, name="ghost")
    with pytest.raises(errors.NotFound):
        h.workflow_event(ghost, WF.RUNNING, 1)
    # A node event only names its execution (no lock is taken), and must still find it.
    with pytest.raises(errors.NotFound, match="ghost"):
        h.node_event(ghost, "n0", NODE.QUEUED, 1)

    # Inline output data is written to the blob store and read back like a uri.
    other = h.create(PIPELINE, {"x": 2})
    h.workflow_event(other, WF.RUNNING, 1)
    h.workflow_event(other, WF.SUCCEEDED, 2, output_data=literal_map({"o0": 8}))
    data = h.svc.GetExecutionData(execution_pb2.WorkflowExecutionGetDataRequest(id=other))
    assert values_of(data.full_outputs) == {"o0": 8}


def test_node_events_create_update_and_read(h):
    exec_id = h.create(PIPELINE, {"x": 3})
    inputs = h.write_literals(data_path(h, exec_id, "n0", "data", "inputs.pb"), {"x": 3})
    outputs = h.write_literals(data_path(h, exec_id, "n0", "data", "0", "outputs.pb"), {"o0": 6})
    h.node_event(exec_id, "start-node", NODE.SUCCEEDED, 1)
    h.node_event(exec_id, "n0", NODE.QUEUED, 2, input_uri=inputs, retry_group="0")
    h.node_event(exec_id, "n0", NODE.RUNNING, 3)
    h.node_event(exec_id, "n0", NODE.SUCCEEDED, 7, output_uri=outputs, deck_uri="/deck.html",
                 task_node_metadata={"cache_status": catalog_pb2.CACHE_POPULATED,
                                     "catalog_key": {"source_task_execution": attempt_id(exec_id, "n0", 0)}})
    h.node_event(exec_id, "n1", NODE.QUEUED, 8)
    # Out of order and repeated events change nothing.
    h.node_event(exec_id, "n0", NODE.RUNNING, 9)
    h.node_event(exec_id, "n1", NODE.QUEUED, 10)

    n0 = get_node(h, exec_id, "n0")
    assert n0.closure.phase == NODE.SUCCEEDED
    assert n0.input_uri == inputs
    assert n0.closure.output_uri == outputs
    assert n0.closure.duration.ToTimedelta().total_seconds() == 4
    assert n0.closure.created_at.seconds < n0.closure.started_at.seconds < n0.closure.updated_at.seconds
    assert n0.closure.task_node_metadata.cache_status == catalog_pb2.CACHE_POPULATED
    assert n0.closure.deck_uri == "/deck.html"
    assert (n0.metadata.spec_node_id, n0.metadata.retry_group) == ("n0", "0")
    assert get_node(h, exec_id, "n1").closure.created_at.seconds == n0.closure.created_at.seconds + 6

    assert list_nodes(h, exec_id) == ["start-node", "n0", "n1"]
    assert list_nodes(h, exec_id, filters="eq(phase,SUCCEEDED)") == ["start-node", "n0"]
    data = h.svc.GetNodeExecutionData(node_execution_pb2.NodeExecutionGetDataRequest(id=node_id(exec_id, "n0")))
    assert values_of(data.full_inputs) == {"x": 3} and values_of(data.full_outputs) == {"o0": 6}
    assert data.outputs.url == outputs and data.outputs.bytes > 0
    assert data.flyte_urls.outputs == f"flyte://v1/{P}/{D}/{exec_id.name}/n0/o"
    assert data.flyte_urls.deck.endswith("/n0/d")
    assert not data.HasField("dynamic_workflow")

    with pytest.raises(errors.NotFound, match="nX"):
        get_node(h, exec_id, "nX")
    with pytest.raises(errors.NotFound):
        h.node_event(idpb.WorkflowExecutionIdentifier(project=P, domain=D, name="ghost"), "n0", NODE.RUNNING, 1)


def test_nested_nodes_list_by_parent(h):
    exec_id = h.create(PIPELINE, {"x": 3})
    h.node_event(exec_id, "n0", NODE.RUNNING, 1, is_parent=True)
    h.node_event(exec_id, "n0-0-n0", NODE.RUNNING, 2, parent="n0", spec_node_id="n0", retry_group="0")
    h.node_event(exec_id, "n0-0-n1", NODE.QUEUED, 3, parent="n0", spec_node_id="n1", retry_group="0")
    h.node_event(exec_id, "n0-0-n0-0-n0", NODE.QUEUED, 4, parent="n0-0-n0", spec_node_id="n0")
    h.node_event(exec_id, "n0", NODE.SUCCEEDED, 5)  # the parent's later event carries no is_parent bit

    assert list_nodes(h, exec_id) == ["n0"]
    assert list_nodes(h, exec_id, parent="n0") == ["n0-0-n0", "n0-0-n1"]
    assert list_nodes(h, exec_id, parent="n0-0-n0") == ["n0-0-n0-0-n0"]
    parent = get_node(h, exec_id, "n0")
    assert parent.metadata.is_parent_node and parent.closure.phase == NODE.SUCCEEDED
    assert get_node(h, exec_id, "n0-0-n1").metadata.spec_node_id == "n1"
    with pytest.raises(errors.NotFound, match="nope"):
        h.node_event(exec_id, "nope-0-n0", NODE.QUEUED, 6, parent="nope")
    with pytest.raises(errors.NotFound, match="nope"):
        list_nodes(h, exec_id, parent="nope")


def test_dynamic_and_launch_plan_nodes(h):
    exec_id = h.create(PIPELINE, {"x": 3})
    compiled = compiler_pb2.CompiledWorkflowClosure()
    compiled.primary.template.id.CopyFrom(idpb.Identifier(resource_type=idpb.WORKFLOW, project=P, domain=D,
                                                          name="dyn", version="v1"))
    compiled.primary.template.nodes.add(id="dn0")
    h.node_event(exec_id, "n0", NODE.RUNNING, 1)
    h.task_event(exec_id, "n0", double.name, 0, TASK.RUNNING, 1)
    h.node_event(exec_id, "n0", NODE.DYNAMIC_RUNNING, 2, is_parent=True, is_dynamic=True, task_node_metadata={
        "dynamic_workflow": {"id": compiled.primary.template.id, "compiled_workflow": compiled,
                             "dynamic_job_spec_uri": "/futures.pb"}})
    h.node_event(exec_id, "n0", NODE.SUCCEEDED, 3)
    h.node_event(exec_id, "n0-0-dn0", NODE.SUCCEEDED, 2.5, parent="n0", spec_node_id="dn0", retry_group="0")
    node = get_node(h, exec_id, "n0")
    assert node.metadata.is_dynamic and node.metadata.is_parent_node
    assert node.closure.dynamic_job_spec_uri == "/futures.pb"
    data = h.svc.GetNodeExecutionData(node_execution_pb2.NodeExecutionGetDataRequest(id=node_id(exec_id, "n0")))
    assert data.dynamic_workflow.compiled_workflow == compiled
    assert data.dynamic_workflow.id.name == "dyn" and data.dynamic_workflow.dynamic_job_spec_uri == "/futures.pb"
    dynamic = h.svc.GetDynamicNodeWorkflow(node_execution_pb2.GetDynamicNodeWorkflowRequest(id=node_id(exec_id, "n0")))
    assert dynamic.compiled_workflow == compiled
    with pytest.raises(errors.NotFound, match="node does not contain dynamic workflow"):
        h.svc.GetDynamicNodeWorkflow(node_execution_pb2.GetDynamicNodeWorkflowRequest(
            id=node_id(exec_id, "n0-0-dn0")))
    spawned = h.svc.ListNodeExecutionsForTask(node_execution_pb2.NodeExecutionForTaskListRequest(
        task_execution_id=attempt_id(exec_id, "n0", 0), limit=10))
    assert [n.id.node_id for n in spawned.node_executions] == ["n0-0-dn0"]
    attempt = h.svc.GetTaskExecution(task_execution_pb2.TaskExecutionGetRequest(id=attempt_id(exec_id, "n0", 0)))
    assert attempt.is_parent

    child = h.create(PIPELINE, {"x": 1})
    h.node_event(exec_id, "n1", NODE.RUNNING, 4, workflow_node_metadata={"execution_id": child})
    assert get_node(h, exec_id, "n1").closure.workflow_node_metadata.executionId == child


def test_task_events_attempts_logs_reasons(h):
    exec_id = h.create(PIPELINE, {"x": 3})
    h.node_event(exec_id, "n0", NODE.RUNNING, 1)
    inputs = h.write_literals(data_path(h, exec_id, "n0", "data", "inputs.pb"), {"x": 3})
    log = {"name": "stdout", "uri": "/logs/0"}
    h.task_event(exec_id, "n0", double.name, 0, TASK.QUEUED, 1, input_uri=inputs, reason="queued",
                 task_type="python-task")
    h.task_event(exec_id, "n0", double.name, 0, TASK.RUNNING, 2, logs=[log], reason="started",
                 custom_info=struct_pb2.Struct(fields={"pid": struct_pb2.Value(number_value=42),
                                                       "host": struct_pb2.Value(string_value="a")}))
    h.task_event(exec_id, "n0", double.name, 0, TASK.RUNNING, 3, phase_version=1, logs=[
        {"name": "stdout", "uri": "/logs/0-v2"}, {"name": "stderr", "uri": "/logs/0-err"}],
        custom_info=struct_pb2.Struct(fields={"pid": struct_pb2.Value(number_value=43)}))
    h.task_event(exec_id, "n0", double.name, 0, TASK.FAILED, 5,
                 error=core.ExecutionError(code="USER:Flaky", message="try again", kind=core.ExecutionError.USER))
    h.task_event(exec_id, "n0", double.name, 0, TASK.RUNNING, 6)  # stale: the attempt is over
    outputs = h.write_literals(data_path(h, exec_id, "n0", "data", "1", "outputs.pb"), {"o0": 6})
    h.task_event(exec_id, "n0", double.name, 1, TASK.RUNNING, 7, input_uri=inputs)
    h.task_event(exec_id, "n0", double.name, 1, TASK.SUCCEEDED, 9, output_uri=outputs)
    h.task_event(exec_id, "n0", double.name, 1, TASK.FAILED, 10)  # after terminal: ignored

    first = h.svc.GetTaskExecution(task_execution_pb2.TaskExecutionGetRequest(id=attempt_id(exec_id, "n0", 0)))
    c = first.closure
    assert c.phase == TASK.FAILED and c.error.message == "try again"
    assert c.duration.ToTimedelta().total_seconds() == 3
    assert [lg.uri for lg in c.logs] == ["/logs/0-v2", "/logs/0-err"]
    assert c.custom_info.fields["pid"].number_value == 43 and c.custom_info.fields["host"].string_value == "a"
    assert [r.message for r in c.reasons] == ["queued", "started"] and c.reason == "started"
    assert c.task_type == "python-task"
    assert c.started_at.seconds > 0 and first.input_uri == inputs

    second = h.svc.GetTaskExecution(task_execution_pb2.TaskExecutionGetRequest(id=attempt_id(exec_id, "n0", 1)))
    assert second.closure.phase == TASK.SUCCEEDED and second.closure.output_uri == outputs
    assert second.closure.duration.ToTimedelta().total_seconds() == 2

    listed = h.svc.ListTaskExecutions(task_execution_pb2.TaskExecutionListRequest(
        node_execution_id=node_id(exec_id, "n0"), limit=10))
    assert [t.id.retry_attempt for t in listed.task_executions] == [0, 1]
    # Filtered, sorted and paged, the list is still this node's attempts.
    def attempts(**request) -> tuple[list[int], str]:
        got = h.svc.ListTaskExecutions(task_execution_pb2.TaskExecutionListRequest(
            node_execution_id=node_id(exec_id, "n0"), **request))
        return [t.id.retry_attempt for t in got.task_executions], got.token

    assert attempts(filters="eq(phase,SUCCEEDED)") == ([1], "")
    assert attempts(sort_by=common_pb2.Sort(key="retry_attempt", direction=common_pb2.Sort.DESCENDING)) == ([1, 0], "")
    assert attempts(limit=1) == ([0], "1") and attempts(limit=1, token="1") == ([1], "")
    assert attempts(filters="eq(phase,RUNNING)") == ([], "")
    data = h.svc.GetTaskExecutionData(task_execution_pb2.TaskExecutionGetDataRequest(id=attempt_id(exec_id, "n0", 1)))
    assert values_of(data.full_inputs) == {"x": 3} and values_of(data.full_outputs) == {"o0": 6}
    assert data.flyte_urls.inputs == f"flyte://v1/{P}/{D}/{exec_id.name}/n0/1/i"

    with pytest.raises(errors.NotFound, match="n9"):
        h.task_event(exec_id, "n9", double.name, 0, TASK.RUNNING, 1)
    with pytest.raises(errors.NotFound, match="attempt 5"):
        h.svc.GetTaskExecution(task_execution_pb2.TaskExecutionGetRequest(id=attempt_id(exec_id, "n0", 5)))


def test_an_array_attempts_items_merge_across_events_in_index_and_retry_order(h):
    exec_id = h.create(PIPELINE, {"x": 3})
    h.node_event(exec_id, "n0", NODE.RUNNING, 1)

    def progress(at: float, *items) -> None:
        h.task_event(exec_id, "n0", double.name, 0, TASK.RUNNING, at, phase_version=int(at), metadata={
            "external_resources": [{"external_id": f"item-{i}-{retry}", "index": i, "retry_attempt": retry,
                                    "phase": phase, "logs": [{"name": f"log {i}/{retry}", "uri": f"/log/{at}"}]}
                                   for i, retry, phase in items]})

    progress(2, (0, 0, TASK.RUNNING), (1, 0, TASK.RUNNING))
    progress(3, (1, 0, TASK.SUCCEEDED), (3, 0, TASK.RUNNING), (2, 0, TASK.RUNNING))  # update, then appended
    progress(4, (0, 1, TASK.RUNNING), (0, 0, TASK.FAILED))  # a retry of an early item: inserted in order
    progress(5, (4, 0, TASK.QUEUED), (4, 0, TASK.SUCCEEDED))  # a new item twice in one event: its last word
    c = h.svc.GetTaskExecution(task_execution_pb2.TaskExecutionGetRequest(id=attempt_id(exec_id, "n0", 0))).closure
    items = [(r.index, r.retry_attempt, r.phase, r.external_id) for r in c.metadata.external_resources]
    assert items == [(0, 0, TASK.FAILED, "item-0-0"), (0, 1, TASK.RUNNING, "item-0-1"),
                     (1, 0, TASK.SUCCEEDED, "item-1-0"), (2, 0, TASK.RUNNING, "item-2-0"),
                     (3, 0, TASK.RUNNING, "item-3-0"), (4, 0, TASK.SUCCEEDED, "item-4-0")]
    first = c.metadata.external_resources[0]
    assert [lg.uri for lg in first.logs] == ["/log/4"]  # the same log name: the latest uri


def test_terminal_task_attempt_is_frozen_and_logs_hide(h):
    exec_id = h.create(PIPELINE, {"x": 3})
    h.node_event(exec_id, "n0", NODE.RUNNING, 1)
    h.task_event(exec_id, "n0", double.name, 0, TASK.RUNNING, 2, logs=[
        {"name": "live", "uri": "/live", "HideOnceFinished": True}, {"name": "stdout", "uri": "/out"}])
    h.task_event(exec_id, "n0", double.name, 0, TASK.FAILED, 4, error=core.ExecutionError(message="boom"))
    h.task_event(exec_id, "n0", double.name, 0, TASK.SUCCEEDED, 5, output_uri="/should/not/stick")
    c = h.svc.GetTaskExecution(task_execution_pb2.TaskExecutionGetRequest(id=attempt_id(exec_id, "n0", 0))).closure
    assert c.phase == TASK.FAILED and c.error.message == "boom" and not c.output_uri
    assert [lg.name for lg in c.logs] == ["stdout"]


def test_inline_event_data_is_offloaded(h):
    exec_id = h.create(PIPELINE, {"x": 3})
    h.node_event(exec_id, "n0", NODE.RUNNING, 1, input_data=literal_map({"x": 3}))
    h.task_event(exec_id, "n0", double.name, 0, TASK.RUNNING, 1, input_data=literal_map({"x": 3}))
    h.task_event(exec_id, "n0", double.name, 0, TASK.SUCCEEDED, 2, output_data=literal_map({"o0": 6}))
    h.node_event(exec_id, "n0", NODE.SUCCEEDED, 2, output_data=literal_map({"o0": 6}))
    node_data = h.svc.GetNodeExecutionData(node_execution_pb2.NodeExecutionGetDataRequest(id=node_id(exec_id, "n0")))
    assert values_of(node_data.full_inputs) == {"x": 3} and values_of(node_data.full_outputs) == {"o0": 6}
    task_data = h.svc.GetTaskExecutionData(task_execution_pb2.TaskExecutionGetDataRequest(
        id=attempt_id(exec_id, "n0", 0)))
    assert values_of(task_data.full_inputs) == {"x": 3} and values_of(task_data.full_outputs) == {"o0": 6}


# -- flytekit reads what the events recorded ------------------------------------------------------------
@pytest.fixture
def remote(h):
    from flytekit.configuration import Config
    from flytekit.remote import FlyteRemote

    server = grpc.server(futures.ThreadPoolExecutor(max_workers=4), interceptors=[ErrorInterceptor()])
    admin_pb2_grpc.add_AdminServiceServicer_to_server(h.svc, server)
    port = server.add_insecure_port("127.0.0.1:0")
    server.start()
    yield FlyteRemote(Config.for_endpoint(f"localhost:{port}", insecure=True), default_project=P, default_domain=D)
    server.stop(0)


def run_pipeline_events(h, exec_id, x: int) -> None:
    """The events propeller sends for pipeline(x): n0 = double(x), n1 = double(n0), o0 = n1."""
    h.workflow_event(exec_id, WF.RUNNING, 1)
    start_out = h.write_literals(data_path(h, exec_id, "start-node", "outputs.pb"), {"x": x})
    h.node_event(exec_id, "start-node", NODE.SUCCEEDED, 1, output_uri=start_out)
    value, at = x, 2
    for node in ("n0", "n1"):
        ins = h.write_literals(data_path(h, exec_id, node, "data", "inputs.pb"), {"x": value})
        value *= 2
        outs = h.write_literals(data_path(h, exec_id, node, "data", "0", "outputs.pb"), {"o0": value})
        h.node_event(exec_id, node, NODE.QUEUED, at, input_uri=ins)
        h.node_event(exec_id, node, NODE.RUNNING, at + 1)
        h.task_event(exec_id, node, double.name, 0, TASK.RUNNING, at + 1, input_uri=ins)
        h.task_event(exec_id, node, double.name, 0, TASK.SUCCEEDED, at + 2, output_uri=outs)
        h.node_event(exec_id, node, NODE.SUCCEEDED, at + 2, output_uri=outs)
        at += 3
    end = h.write_literals(data_path(h, exec_id, "end-node", "data", "inputs.pb"), {"o0": value})
    h.node_event(exec_id, "end-node", NODE.SUCCEEDED, at, input_uri=end)
    h.workflow_event(exec_id, WF.SUCCEEDED, at, output_uri=end)


def test_flyte_remote_syncs_a_finished_execution(h, remote):
    exec_id = h.create(PIPELINE, {"x": 5}, name="synced")
    run_pipeline_events(h, exec_id, 5)
    execution = remote.sync_execution(remote.fetch_execution(name="synced"), sync_nodes=True)
    assert execution.is_done and execution.is_successful
    assert execution.inputs["x"] == 5 and execution.outputs["o0"] == 20
    n1 = execution.node_executions["n1"]
    assert n1.inputs["x"] == 10 and n1.outputs["o0"] == 20
    assert [t.outputs["o0"] for t in n1.task_executions] == [20]


def test_flyte_remote_syncs_a_single_task_execution(h, remote):
    exec_id = h.create(double.name, {"x": 4}, name="single", resource_type=idpb.TASK)
    node = "testsadminexecutionharnessdouble"
    h.workflow_event(exec_id, WF.RUNNING, 1)
    ins = h.write_literals(data_path(h, exec_id, node, "data", "inputs.pb"), {"x": 4})
    outs = h.write_literals(data_path(h, exec_id, node, "data", "0", "outputs.pb"), {"o0": 8})
    h.node_event(exec_id, node, NODE.RUNNING, 2, input_uri=ins)
    h.task_event(exec_id, node, double.name, 0, TASK.RUNNING, 2, input_uri=ins)
    h.task_event(exec_id, node, double.name, 0, TASK.SUCCEEDED, 3, output_uri=outs)
    h.node_event(exec_id, node, NODE.SUCCEEDED, 3, output_uri=outs)
    h.workflow_event(exec_id, WF.SUCCEEDED, 4, output_uri=outs)
    execution = remote.sync_execution(remote.fetch_execution(name="single"), sync_nodes=True)
    assert execution.outputs["o0"] == 8 and execution.inputs["x"] == 4
    assert execution.node_executions[node].task_executions[0].closure.phase == TASK.SUCCEEDED
