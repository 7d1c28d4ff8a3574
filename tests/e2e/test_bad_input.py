"""Bad input gets the right gRPC status and a message a user can act on; never UNKNOWN."""

from __future__ import annotations

import grpc
import pytest
from flyteidl.admin import execution_pb2, launch_plan_pb2, task_pb2, workflow_pb2
from flyteidl.core import identifier_pb2, literals_pb2
from flyteidl.service import admin_pb2_grpc

pytestmark = pytest.mark.e2e


@pytest.fixture(scope="module")
def stub(server):
    channel = grpc.insecure_channel(server.endpoint)
    yield admin_pb2_grpc.AdminServiceStub(channel)
    channel.close()


def code_of(call, request):
    with pytest.raises(grpc.RpcError) as info:
        call(request, timeout=30)
    return info.value.code(), info.value.details()


def ident(rt, name="nope", version="v1", project="flytesnacks", domain="development"):
    return identifier_pb2.Identifier(resource_type=rt, project=project, domain=domain, name=name, version=version)


def test_unknown_entities_are_not_found(stub):
    from flyteidl.admin import common_pb2

    for call, rt in [(stub.GetTask, identifier_pb2.TASK), (stub.GetWorkflow, identifier_pb2.WORKFLOW),
                     (stub.GetLaunchPlan, identifier_pb2.LAUNCH_PLAN)]:
        code, details = code_of(call, common_pb2.ObjectGetRequest(id=ident(rt)))
        assert code == grpc.StatusCode.NOT_FOUND, details
        assert "nope" in details
    code, details = code_of(stub.GetExecution, execution_pb2.WorkflowExecutionGetRequest(
        id=identifier_pb2.WorkflowExecutionIdentifier(project="flytesnacks", domain="development", name="nope")))
    assert code == grpc.StatusCode.NOT_FOUND, details


def test_malformed_requests_are_invalid_argument(stub):
    code, details = code_of(stub.CreateTask, task_pb2.TaskCreateRequest())
    assert code == grpc.StatusCode.INVALID_ARGUMENT, details
    code, details = code_of(stub.CreateWorkflow, workflow_pb2.WorkflowCreateRequest(
        id=ident(identifier_pb2.WORKFLOW, project="no-such-project")))
    assert code in (grpc.StatusCode.INVALID_ARGUMENT, grpc.StatusCode.NOT_FOUND), details
    code, details = code_of(stub.CreateLaunchPlan, launch_plan_pb2.LaunchPlanCreateRequest(
        id=ident(identifier_pb2.LAUNCH_PLAN, name="lp")))
    assert code in (grpc.StatusCode.INVALID_ARGUMENT, grpc.StatusCode.NOT_FOUND), details


def test_execution_of_unknown_launch_plan_is_not_found(stub):
    request = execution_pb2.ExecutionCreateRequest(
        project="flytesnacks", domain="development",
        spec=execution_pb2.ExecutionSpec(launch_plan=ident(identifier_pb2.LAUNCH_PLAN)),
        inputs=literals_pb2.LiteralMap(),
    )
    code, details = code_of(stub.CreateExecution, request)
    assert code == grpc.StatusCode.NOT_FOUND, details


def test_an_event_rpc_says_why_it_is_not_served(stub):
    from flyteidl.admin import event_pb2

    code, details = code_of(stub.CreateNodeEvent, event_pb2.NodeExecutionEventRequest())
    assert code == grpc.StatusCode.UNIMPLEMENTED
    assert "CreateNodeEvent is not served" in details and "records its events itself" in details


def test_bytes_that_do_not_parse_are_invalid_argument_on_every_service(server):
    from flytelite.admin.grpc_services import GRPC_SERVICES

    channel = grpc.insecure_channel(server.endpoint)
    try:
        for service in GRPC_SERVICES:
            for method in service.descriptor.methods:
                rpc = channel.unary_unary(f"/{service.descriptor.full_name}/{method.name}")
                code, details = code_of(rpc, b"\x0a\xff\xff\xff\xff\x0f")  # a length past the end
                assert code == grpc.StatusCode.INVALID_ARGUMENT, (method.name, details)
                assert "does not parse" in details
    finally:
        channel.close()


def test_a_huge_id_is_answered_with_the_real_error(stub):
    huge = "p" * (1 << 20)
    code, details = code_of(stub.GetExecution, execution_pb2.WorkflowExecutionGetRequest(
        id=identifier_pb2.WorkflowExecutionIdentifier(project=huge, domain="development", name="e")))
    assert code == grpc.StatusCode.NOT_FOUND, details[:300]
    assert "more characters" in details
