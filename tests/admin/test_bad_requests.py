"""A client's mistakes are INVALID_ARGUMENT or NOT_FOUND with a message to act on, never INTERNAL: the
cases fuzzing found (issue 15), over a real gRPC server with the server's error interceptor."""

from __future__ import annotations

import grpc
import pytest
from flyteidl.admin import (
    common_pb2,
    execution_pb2,
    launch_plan_pb2,
    node_execution_pb2,
    task_execution_pb2,
    task_pb2,
    workflow_pb2,
)
from flyteidl.core import execution_pb2 as core_exec
from flyteidl.core import identifier_pb2 as idpb
from flyteidl.service import dataproxy_pb2
from google.protobuf import descriptor, duration_pb2, message_factory

from flytelite.admin.grpc_services import GRPC_SERVICES
from flytelite.errors import MAX_MESSAGE_BYTES
from tests.console.test_pages import add_attempt, add_execution, add_node
from tests.fuzz.strategies import varint

P, D = "flytesnacks", "development"
_FD = descriptor.FieldDescriptor


def call(admin, service: str, method: str, request, raw: bool = False):
    """Call /flyteidl.service.<service>/<method>; returns (code, details), code OK on success."""
    rpc = admin.channel.unary_unary(
        f"/flyteidl.service.{service}/{method}",
        request_serializer=(lambda b: b) if raw else (lambda m: m.SerializeToString()),
        response_deserializer=lambda b: b)
    try:
        rpc(request, timeout=60)
        return grpc.StatusCode.OK, ""
    except grpc.RpcError as exc:
        return exc.code(), exc.details() or ""


def nested_literal(depth: int) -> bytes:
    """A Literal whose collection holds a collection ... `depth` times (two message levels each)."""
    data = b""
    for _ in range(depth):
        collection = b"\x0a" + varint(len(data)) + data   # LiteralCollection.literals
        data = b"\x12" + varint(len(collection)) + collection  # Literal.collection
    return data


def test_request_bytes_that_do_not_parse_are_invalid_argument(admin):
    code, details = call(admin, "AdminService", "GetTask", b"\xff\xff\xff", raw=True)
    assert code == grpc.StatusCode.INVALID_ARGUMENT, details
    assert "GetTask" in details and "not a valid protobuf encoding" in details
    # ExecutionCreateRequest.inputs (5) holds LiteralMap.literals (1) {key "x" (1), value (2): the deep literal}
    literal = nested_literal(60)
    entry = b"\x0a\x01x" + b"\x12" + varint(len(literal)) + literal
    inputs = b"\x0a" + varint(len(entry)) + entry
    request = b"\x0a\x0bflytesnacks\x12\x0bdevelopment\x2a" + varint(len(inputs)) + inputs
    code, details = call(admin, "AdminService", "CreateExecution", request, raw=True)
    assert code == grpc.StatusCode.INVALID_ARGUMENT, details
    assert "deeper than protobuf's parser allows" in details
    # Nesting within the limit still parses: the same request is refused later, for its missing spec.
    literal = nested_literal(20)
    entry = b"\x0a\x01x" + b"\x12" + varint(len(literal)) + literal
    inputs = b"\x0a" + varint(len(entry)) + entry
    request = b"\x0a\x0bflytesnacks\x12\x0bdevelopment\x2a" + varint(len(inputs)) + inputs
    code, details = call(admin, "AdminService", "CreateExecution", request, raw=True)
    assert code == grpc.StatusCode.INVALID_ARGUMENT and "needs a spec" in details, details


def ident(resource_type: int, name: str = "t", version: str = "v1") -> idpb.Identifier:
    return idpb.Identifier(resource_type=resource_type, project=P, domain=D, name=name, version=version)


@pytest.mark.parametrize(("method", "request_"), [
    ("GetTask", common_pb2.ObjectGetRequest(id=ident(999))),
    ("GetWorkflow", common_pb2.ObjectGetRequest(id=ident(999))),
    ("GetLaunchPlan", common_pb2.ObjectGetRequest(id=ident(999))),
    ("CreateTask", task_pb2.TaskCreateRequest(id=ident(999))),
    ("CreateWorkflow", workflow_pb2.WorkflowCreateRequest(id=ident(999))),
    ("CreateLaunchPlan", launch_plan_pb2.LaunchPlanCreateRequest(id=ident(999))),
    ("CreateExecution", execution_pb2.ExecutionCreateRequest(
        project=P, domain=D, spec=execution_pb2.ExecutionSpec(launch_plan=ident(999)))),
])
def test_unknown_resource_type_is_invalid_argument(admin, method, request_):
    code, details = call(admin, "AdminService", method, request_)
    assert code == grpc.StatusCode.INVALID_ARGUMENT, details
    assert "999 (not a ResourceType value)" in details


def test_unknown_artifact_type_is_invalid_argument(admin):
    code, details = call(admin, "DataProxyService", "CreateDownloadLink",
                         dataproxy_pb2.CreateDownloadLinkRequest(artifact_type=999))
    assert code == grpc.StatusCode.INVALID_ARGUMENT, details
    assert "ARTIFACT_TYPE_DECK only, got 999" in details


@pytest.mark.parametrize("seconds", [2**62, -(2**62)])
def test_expires_in_beyond_range_is_invalid_argument(admin, seconds):
    too_long = duration_pb2.Duration(seconds=seconds)
    for method, request in [
        ("CreateUploadLocation", dataproxy_pb2.CreateUploadLocationRequest(
            project=P, domain=D, filename_root="r", expires_in=too_long)),
        ("CreateDownloadLocation", dataproxy_pb2.CreateDownloadLocationRequest(
            native_url="x", expires_in=too_long)),
    ]:
        code, details = call(admin, "DataProxyService", method, request)
        assert code == grpc.StatusCode.INVALID_ARGUMENT, (method, details)
        assert "expires_in" in details and "upload_url_seconds" in details


# What the fields of a list request hold to list the rows below: by the field's name, in its message.
_VALUES = {("WorkflowExecutionIdentifier", "name"): "tok1", ("Identifier", "name"): "wf.t1",
           ("Identifier", "version"): "v1", ("NodeExecutionIdentifier", "node_id"): "n0",
           ("NamedEntityIdentifier", "name"): "wf.t1"}


def _fill(msg) -> None:
    """Point every id in a list request at the execution, node and attempt the test added."""
    for field in msg.DESCRIPTOR.fields:
        if field.type == _FD.TYPE_MESSAGE and field.message_type.name.endswith("Identifier"):
            _fill(getattr(msg, field.name))
        elif field.name == "resource_type":
            setattr(msg, field.name, idpb.TASK)
        elif field.type == _FD.TYPE_STRING:
            value = {"project": P, "domain": D}.get(field.name) or _VALUES.get((msg.DESCRIPTOR.name, field.name))
            if value:
                setattr(msg, field.name, value)
        elif field.name == "limit":
            msg.limit = 10


def test_every_list_rpc_refuses_pagination_tokens_out_of_range(admin):
    add_execution(admin.ctx, "tok1", core_exec.WorkflowExecution.SUCCEEDED)
    add_node(admin.ctx, "tok1", "n0", core_exec.NodeExecution.SUCCEEDED)
    add_attempt(admin.ctx, "tok1", "n0", 0, core_exec.TaskExecution.SUCCEEDED, "http://x/log")
    checked = []
    for service in GRPC_SERVICES:
        for method in service.descriptor.methods:
            if "token" not in method.input_type.fields_by_name:
                continue
            request = message_factory.GetMessageClass(method.input_type)()
            _fill(request)
            code, details = call(admin, service.name, method.name, request)
            if code == grpc.StatusCode.UNIMPLEMENTED:
                continue
            assert code == grpc.StatusCode.OK, (method.name, details)  # the request reaches the paging
            for token in (str(2**63), str(2**64 + 1), "-1"):
                request.token = token
                code, details = call(admin, service.name, method.name, request)
                assert code == grpc.StatusCode.INVALID_ARGUMENT, (method.name, token, details)
                assert "invalid pagination token" in details
            checked.append(method.name)
    assert {"ListExecutions", "ListNodeExecutions", "ListNodeExecutionsForTask", "ListTaskExecutions",
            "ListTasks", "ListTaskIds", "ListProjects", "ListNamedEntities", "ListSignals"} <= set(checked)
    print(f"{len(checked)} list RPCs refuse tokens beyond 2^63 and negative ones")


@pytest.mark.parametrize(("filters", "value"), [
    ("gte(duration,abc)", "'abc'"),
    ("lt(duration,1e999)", "'1e999'"),
    (f"eq(phase,{2**64})", str(2**64)),
])
def test_filter_values_that_are_no_number_are_invalid_argument(admin, filters, value):
    code, details = call(admin, "AdminService", "ListExecutions", common_pb2.ResourceListRequest(
        id=common_pb2.NamedEntityIdentifier(project=P, domain=D), limit=5, filters=filters))
    assert code == grpc.StatusCode.INVALID_ARGUMENT, details
    assert value in details


def test_node_and_task_execution_filters_check_their_numbers(admin):
    add_execution(admin.ctx, "flt1", core_exec.WorkflowExecution.SUCCEEDED)
    add_node(admin.ctx, "flt1", "n0", core_exec.NodeExecution.SUCCEEDED)
    exec_id = idpb.WorkflowExecutionIdentifier(project=P, domain=D, name="flt1")
    code, details = call(admin, "AdminService", "ListNodeExecutions", node_execution_pb2.NodeExecutionListRequest(
        workflow_execution_id=exec_id, limit=5, filters="gte(duration,abc)"))
    assert code == grpc.StatusCode.INVALID_ARGUMENT and "'abc'" in details, details
    code, details = call(admin, "AdminService", "ListTaskExecutions", task_execution_pb2.TaskExecutionListRequest(
        node_execution_id=idpb.NodeExecutionIdentifier(node_id="n0", execution_id=exec_id), limit=5,
        filters=f"eq(retry_attempt,{2**64})"))
    assert code == grpc.StatusCode.INVALID_ARGUMENT and "retry_attempt" in details, details


def test_a_huge_value_is_not_echoed_whole(admin):
    huge = "x" * (1 << 20)
    code, details = call(admin, "AdminService", "GetExecution", execution_pb2.WorkflowExecutionGetRequest(
        id=idpb.WorkflowExecutionIdentifier(project=huge, domain=D, name="e")))
    assert code == grpc.StatusCode.NOT_FOUND, (code, details[:200])
    assert len(details.encode()) <= MAX_MESSAGE_BYTES and "more characters" in details
    code, details = call(admin, "AdminService", "CreateExecution", execution_pb2.ExecutionCreateRequest(
        project=P, domain=D, name=huge))
    assert code == grpc.StatusCode.INVALID_ARGUMENT, (code, details[:200])
    assert "execution name 'xxxxx" in details and len(details.encode()) <= MAX_MESSAGE_BYTES
    # Many short words: the whole message is capped as well.
    code, details = call(admin, "AdminService", "CreateExecution", execution_pb2.ExecutionCreateRequest(
        project=P, domain=D, name="é " * 300_000))
    assert code == grpc.StatusCode.INVALID_ARGUMENT, (code, details[:200])
    assert "message cut" in details


def test_values_the_database_cannot_hold_are_invalid_argument(admin):
    """SQLite stores NUL and 64-bit numbers, so these are simply not found there; PostgreSQL refuses them."""
    from flyteidl.admin import task_execution_pb2

    expected = grpc.StatusCode.NOT_FOUND if admin.ctx.db.is_sqlite else grpc.StatusCode.INVALID_ARGUMENT
    code, details = call(admin, "AdminService", "GetExecution", execution_pb2.WorkflowExecutionGetRequest(
        id=idpb.WorkflowExecutionIdentifier(project="flyte\x00snacks", domain=D, name="e")))
    assert code == expected, details
    exec_id = idpb.WorkflowExecutionIdentifier(project=P, domain=D, name="e")
    code, details = call(admin, "AdminService", "GetTaskExecution", task_execution_pb2.TaskExecutionGetRequest(
        id=idpb.TaskExecutionIdentifier(task_id=ident(idpb.TASK), retry_attempt=2**32 - 1,
                                        node_execution_id=idpb.NodeExecutionIdentifier(node_id="n0",
                                                                                      execution_id=exec_id))))
    assert code == expected, details
    if expected == grpc.StatusCode.INVALID_ARGUMENT:
        assert "numbers must fit their field" in details


# What flytelite does not serve, by design: FlytePropeller's event RPCs (its engine is inside the server).
NOT_SERVED = {"CreateWorkflowEvent", "CreateNodeEvent", "CreateTaskEvent"}
def test_only_the_event_rpcs_answer_unimplemented(admin):
    unimplemented = {}
    for service in GRPC_SERVICES:
        for method in service.descriptor.methods:
            request = message_factory.GetMessageClass(method.input_type)()
            code, details = call(admin, service.name, method.name, request)
            if code == grpc.StatusCode.UNIMPLEMENTED:
                unimplemented[method.name] = details
    assert set(unimplemented) == NOT_SERVED, sorted(unimplemented)
    for rpc in NOT_SERVED:
        assert "records its events itself" in unimplemented[rpc]
