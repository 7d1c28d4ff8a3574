"""GetDescriptionEntity / ListDescriptionEntities: the descriptions `pyflyte register` sends with a task and a
workflow (flytekit's Documentation, or a docstring) come back as FlyteAdmin serves them."""

from __future__ import annotations

import grpc
import pytest
from flyteidl.admin import common_pb2, description_entity_pb2
from flyteidl.core import identifier_pb2 as idpb
from flyteidl.service import admin_pb2_grpc

from tests.e2e.flyte_cli import copy_workflows, pyflyte

pytestmark = pytest.mark.e2e

P, D, V = "flytesnacks", "development", "desc-v1"


@pytest.fixture(scope="module")
def stub(server, tmp_path_factory):
    code = copy_workflows(tmp_path_factory.mktemp("desc"), "described.py")
    pyflyte(server, "register", "--project", P, "--domain", D, "--version", V, "described.py", cwd=code)
    with grpc.insecure_channel(server.endpoint) as channel:
        yield admin_pb2_grpc.AdminServiceStub(channel)


def _id(kind, name: str, version: str = V) -> idpb.Identifier:
    return idpb.Identifier(resource_type=kind, project=P, domain=D, name=name, version=version)


def test_a_tasks_and_a_workflows_descriptions(stub):
    task = stub.GetDescriptionEntity(common_pb2.ObjectGetRequest(id=_id(idpb.TASK, "described.double")), timeout=30)
    assert task.short_description == "Doubles a number."
    assert task.long_description.value == "Returns twice its input, for the description tests."
    assert task.source_code.link == "https://example.com/described.py"
    assert task.id == _id(idpb.TASK, "described.double")
    listed = stub.ListDescriptionEntities(description_entity_pb2.DescriptionEntityListRequest(
        resource_type=idpb.WORKFLOW, id=common_pb2.NamedEntityIdentifier(project=P, domain=D,
                                                                         name="described.described_wf"),
        limit=10), timeout=30)
    (workflow,) = listed.descriptionEntities
    assert workflow.short_description == "Runs double once."
    assert "long part of the workflow's docstring" in workflow.long_description.value


def test_description_requests_it_cannot_answer(stub):
    with pytest.raises(grpc.RpcError) as err:
        stub.GetDescriptionEntity(common_pb2.ObjectGetRequest(id=_id(idpb.LAUNCH_PLAN, "described.described_wf")))
    assert err.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    with pytest.raises(grpc.RpcError) as err:
        stub.GetDescriptionEntity(common_pb2.ObjectGetRequest(id=_id(idpb.TASK, "described.double", "nope")))
    assert err.value.code() == grpc.StatusCode.NOT_FOUND and "is not registered" in err.value.details()
