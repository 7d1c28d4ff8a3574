"""What the audit trail says a call named (admin/audit.describe): project, domain and resource of each kind of
request it records."""

from __future__ import annotations

import pytest
from flyteidl.admin import (
    execution_pb2,
    launch_plan_pb2,
    matchable_resource_pb2,
    project_attributes_pb2,
    project_pb2,
    signal_pb2,
    task_pb2,
    workflow_attributes_pb2,
)
from flyteidl.core import identifier_pb2 as idpb

from flytelite.admin.audit import describe, describe_call

RUN = idpb.WorkflowExecutionIdentifier(project="p", domain="d", name="f3b1c0")


@pytest.mark.parametrize("request_, named", [
    (execution_pb2.ExecutionCreateRequest(project="p", domain="d", name="mine"), ("p", "d", "mine")),
    (task_pb2.TaskCreateRequest(id=idpb.Identifier(project="p", domain="d", name="t", version="v1")),
     ("p", "d", "t:v1")),
    (launch_plan_pb2.LaunchPlanUpdateRequest(id=idpb.Identifier(project="p", domain="d", name="lp", version="v2")),
     ("p", "d", "lp:v2")),
    (execution_pb2.ExecutionTerminateRequest(id=RUN, cause="no longer needed"), ("p", "d", "f3b1c0")),
    (execution_pb2.ExecutionRelaunchRequest(id=RUN, name="again"), ("p", "d", "f3b1c0")),
    (signal_pb2.SignalSetRequest(id=idpb.SignalIdentifier(signal_id="approve", execution_id=RUN)),
     ("p", "d", "f3b1c0:approve")),
    (project_pb2.ProjectRegisterRequest(project=project_pb2.Project(id="ml", name="Machine learning")),
     ("ml", "", "Machine learning")),
    (project_pb2.Project(id="ml", name="ML"), ("ml", "", "ML")),
    (workflow_attributes_pb2.WorkflowAttributesUpdateRequest(attributes=workflow_attributes_pb2.WorkflowAttributes(
        project="p", domain="d", workflow="wf")), ("p", "d", "wf")),
    (project_attributes_pb2.ProjectAttributesDeleteRequest(
        project="p", resource_type=matchable_resource_pb2.TASK_RESOURCE), ("p", "", "")),
])
def test_each_audited_request_names_its_project_and_what_it_touches(request_, named):
    assert describe(request_) == named


def test_a_name_the_server_chose_comes_from_the_response():
    request = execution_pb2.ExecutionCreateRequest(project="p", domain="d")
    assert describe(request) == ("p", "d", "")
    assert describe_call(request, execution_pb2.ExecutionCreateResponse(id=RUN)) == ("p", "d", "f3b1c0")
    assert describe_call(None, None) == ("", "", "")
