"""Matchable attributes as flytectl's update/get/delete ...-attribute commands send them (AdminService over gRPC;
flytekit's client where its models carry the kind): stored per level, listed, and applied to executions with
FlyteAdmin's precedence (request > launch plan > workflow attributes > project-domain attributes > project
attributes > server defaults)."""

from __future__ import annotations

from datetime import timedelta

import grpc
import pytest
from flyteidl.admin import matchable_resource_pb2 as M
from flyteidl.admin import project_attributes_pb2 as PA
from flyteidl.admin import project_domain_attributes_pb2 as PD
from flyteidl.admin import workflow_attributes_pb2 as W
from flyteidl.service import admin_pb2_grpc
from flytekit.models import matchable_resource as mr
from flytekit.models.core.execution import WorkflowExecutionPhase
from flytekit.models.project import Project

from flytelite.testing import make_server
from tests.e2e.flyte_cli import EXECUTION_URL, copy_workflows, pyflyte, remote_for

pytestmark = pytest.mark.e2e

P, D = "attrs", "development"


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    srv = make_server(tmp_path_factory.mktemp("attrs"))
    srv.start()
    remote_for(srv).client.register_project(Project(P, P, "matchable attributes"))
    yield srv
    srv.stop()


@pytest.fixture(scope="module")
def code(tmp_path_factory):
    return copy_workflows(tmp_path_factory.mktemp("attrs-wf"), "attributed.py")


@pytest.fixture(scope="module")
def stub(server):
    with grpc.insecure_channel(server.endpoint) as channel:
        yield admin_pb2_grpc.AdminServiceStub(channel)


def _run(server, code, entity: str, *options: str):
    proc = pyflyte(server, "run", "--remote", "--project", P, "--domain", D, *options, "attributed.py", entity,
                   cwd=code)
    match = EXECUTION_URL.search(proc.stdout + proc.stderr)
    assert match, proc.stdout + proc.stderr
    remote = remote_for(server, P, D)
    return remote.wait(remote.fetch_execution(name=match.group(3)), timeout=timedelta(seconds=120),
                       poll_interval=timedelta(seconds=0.5))


def _wec(envs: dict[str, str], max_parallelism: int = 0) -> M.MatchingAttributes:
    config = M.WorkflowExecutionConfig(max_parallelism=max_parallelism)
    for key, value in envs.items():
        config.envs.values.add(key=key, value=value)
    return M.MatchingAttributes(workflow_execution_config=config)


def _x(execution) -> str:
    assert execution.closure.phase == WorkflowExecutionPhase.SUCCEEDED, execution.error
    return execution.outputs["o0"]


def test_workflow_execution_config_applies_with_flyteadmins_precedence(server, code, stub):
    # Before any is set, the project's answer is the server's defaults, as FlyteAdmin's.
    defaults = stub.GetProjectAttributes(PA.ProjectAttributesGetRequest(
        project=P, resource_type=M.WORKFLOW_EXECUTION_CONFIG)).attributes.matching_attributes.workflow_execution_config
    assert defaults.max_parallelism == 25 and defaults.raw_output_data_config.output_location_prefix
    stub.UpdateProjectAttributes(PA.ProjectAttributesUpdateRequest(attributes=PA.ProjectAttributes(
        project=P, matching_attributes=_wec({"X": "from-project", "Y": "y"}))))
    stub.UpdateProjectDomainAttributes(PD.ProjectDomainAttributesUpdateRequest(attributes=PD.ProjectDomainAttributes(
        project=P, domain=D, matching_attributes=_wec({"X": "from-project-domain"}, max_parallelism=7))))
    stub.UpdateWorkflowAttributes(W.WorkflowAttributesUpdateRequest(attributes=W.WorkflowAttributes(
        project=P, domain=D, workflow="attributed.env_wf", matching_attributes=_wec({"X": "from-workflow"}))))
    got = stub.GetProjectDomainAttributes(PD.ProjectDomainAttributesGetRequest(
        project=P, domain=D, resource_type=M.WORKFLOW_EXECUTION_CONFIG))
    assert got.attributes.matching_attributes.workflow_execution_config.max_parallelism == 7

    assert _x(_run(server, code, "env_wf")) == "from-workflow"
    other = _run(server, code, "other_env_wf")
    assert _x(other) == "from-project-domain" and other.spec.max_parallelism == 7
    # The launch plan's own max parallelism wins over the attributes'; its workflow's attributes still apply.
    through_lp = _run(server, code, "env_lp")
    assert _x(through_lp) == "from-workflow" and through_lp.spec.max_parallelism == 3
    assert _x(_run(server, code, "env_wf", "--env", "X=from-the-run")) == "from-the-run"

    listed = stub.ListMatchableAttributes(M.ListMatchableAttributesRequest(resource_type=M.WORKFLOW_EXECUTION_CONFIG))
    assert [(c.project, c.domain, c.workflow) for c in listed.configurations] == [
        (P, D, "attributed.env_wf"), (P, D, ""), (P, "", "")]  # most specific first

    stub.DeleteWorkflowAttributes(W.WorkflowAttributesDeleteRequest(
        project=P, domain=D, workflow="attributed.env_wf", resource_type=M.WORKFLOW_EXECUTION_CONFIG))
    assert _x(_run(server, code, "env_wf")) == "from-project-domain"
    stub.DeleteProjectDomainAttributes(PD.ProjectDomainAttributesDeleteRequest(
        project=P, domain=D, resource_type=M.WORKFLOW_EXECUTION_CONFIG))
    assert _x(_run(server, code, "env_wf")) == "from-project"
    with pytest.raises(grpc.RpcError) as err:
        stub.GetWorkflowAttributes(W.WorkflowAttributesGetRequest(
            project=P, domain=D, workflow="attributed.env_wf", resource_type=M.WORKFLOW_EXECUTION_CONFIG))
    assert err.value.code() == grpc.StatusCode.NOT_FOUND


def _override(plugin_ids: list[str], behavior: int) -> mr.MatchingAttributes:
    return mr.MatchingAttributes(plugin_overrides=mr.PluginOverrides(overrides=[
        mr.PluginOverride(task_type="python-task", plugin_id=plugin_ids, missing_plugin_behavior=behavior)]))


def test_plugin_overrides_route_a_task_type(server, code):
    client = remote_for(server, P, D).client
    client.update_project_domain_attributes(P, D, _override(["gpu-cluster"], mr.PluginOverride.FAIL))
    failed = _run(server, code, "other_env_wf")
    assert failed.closure.phase == WorkflowExecutionPhase.FAILED
    assert "plugin override of task type 'python-task' names gpu-cluster" in failed.error.message
    client.update_project_domain_attributes(P, D, _override(["gpu-cluster"], mr.PluginOverride.USE_DEFAULT))
    assert _run(server, code, "other_env_wf").closure.phase == WorkflowExecutionPhase.SUCCEEDED
    client.update_project_domain_attributes(P, D, _override(["local"], mr.PluginOverride.FAIL))
    assert _run(server, code, "other_env_wf").closure.phase == WorkflowExecutionPhase.SUCCEEDED
    got = client.get_project_domain_attributes(P, D, mr.MatchableResource.PLUGIN_OVERRIDE)
    (override,) = got.attributes.matching_attributes.plugin_overrides.overrides  # merged by task type
    assert override.plugin_id == ["local"]


def test_bad_attribute_requests_get_clear_errors(stub):
    with pytest.raises(grpc.RpcError) as err:
        stub.UpdateProjectDomainAttributes(PD.ProjectDomainAttributesUpdateRequest(
            attributes=PD.ProjectDomainAttributes(project=P, domain=D)))
    assert err.value.code() == grpc.StatusCode.INVALID_ARGUMENT and "sets no attribute" in err.value.details()
    with pytest.raises(grpc.RpcError) as err:
        stub.UpdateProjectDomainAttributes(PD.ProjectDomainAttributesUpdateRequest(
            attributes=PD.ProjectDomainAttributes(project=P, domain="nowhere", matching_attributes=M.MatchingAttributes(
                execution_queue_attributes=M.ExecutionQueueAttributes(tags=["a"])))))
    assert err.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    with pytest.raises(grpc.RpcError) as err:
        stub.GetProjectDomainAttributes(PD.ProjectDomainAttributesGetRequest(
            project=P, domain=D, resource_type=M.CLUSTER_ASSIGNMENT))
    assert err.value.code() == grpc.StatusCode.NOT_FOUND and "CLUSTER_ASSIGNMENT" in err.value.details()


def test_task_resource_attributes_set_the_tasks_resources(server, code, stub):
    from flyteidl.core import compiler_pb2, tasks_pb2
    from sqlalchemy import create_engine, text

    from flytelite.testing import database_url_for

    stub.UpdateProjectDomainAttributes(PD.ProjectDomainAttributesUpdateRequest(attributes=PD.ProjectDomainAttributes(
        project=P, domain=D, matching_attributes=M.MatchingAttributes(task_resource_attributes=M.TaskResourceAttributes(
            defaults=M.TaskResourceSpec(cpu="250m", memory="300Mi"), limits=M.TaskResourceSpec(memory="400Mi"))))))
    execution = _run(server, code, "other_env_wf")
    assert execution.closure.phase == WorkflowExecutionPhase.SUCCEEDED
    # What the engine runs: the execution's compiled workflow, with the resources applied to its task.
    engine = create_engine(database_url_for(server.home) or f"sqlite:///{server.home / 'flytelite.db'}")
    with engine.connect() as db:
        closure_pb = db.execute(text("SELECT closure_pb FROM flyte_workflows WHERE name = :name"),
                                {"name": execution.id.name}).scalar_one()
    engine.dispose()
    resources = compiler_pb2.CompiledWorkflowClosure.FromString(closure_pb).tasks[0].template.container.resources
    R = tasks_pb2.Resources
    assert {e.name: e.value for e in resources.requests} == {R.CPU: "250m", R.MEMORY: "300Mi"}
    assert {e.name: e.value for e in resources.limits} == {R.CPU: "250m", R.MEMORY: "300Mi"}
