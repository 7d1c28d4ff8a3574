"""Projects, tasks and workflows through FlyteAdmin's gRPC API (see harness.py for the setup)."""

from __future__ import annotations

from concurrent import futures

import grpc
from flyteidl.admin import common_pb2, project_pb2, task_pb2, workflow_pb2
from flyteidl.core import identifier_pb2 as idpb
from flytekit.configuration import ImageConfig, SerializationSettings

from flytelite.admin.entity_common import digest
from flytelite.store.models import Workflow
from tests.admin.flows import T_DOUBLE, T_GREET, WF, WF_BRANCHY, branchy, double, greet, pipeline
from tests.admin.harness import D, P, reorder_upstreams, rpc_error, spec_of, task_id


# -- projects ---------------------------------------------------------------------------------------
def test_default_project_and_domains(admin):
    projects, _ = admin.client.list_projects_paginated()
    assert [p.id for p in projects] == [P]
    listed = admin.stub.ListProjects(project_pb2.ProjectListRequest(limit=10)).projects
    assert [d.id for d in listed[0].domains] == ["development", "staging", "production"]
    assert [d.id for d in admin.client.get_domains()] == ["development", "staging", "production"]
    assert admin.stub.GetProject(project_pb2.ProjectGetRequest(id=P)).name == P


def test_register_update_archive_project(admin):
    new = project_pb2.Project(id="ml-team", name="ML team", description="models")
    admin.stub.RegisterProject(project_pb2.ProjectRegisterRequest(project=new))
    err = rpc_error(admin.stub.RegisterProject, project_pb2.ProjectRegisterRequest(project=new))
    assert err.code() == grpc.StatusCode.ALREADY_EXISTS
    bad = project_pb2.Project(id="Not A DNS Label", name="x")
    assert rpc_error(admin.stub.RegisterProject,
                     project_pb2.ProjectRegisterRequest(project=bad)).code() == grpc.StatusCode.INVALID_ARGUMENT

    page1 = admin.stub.ListProjects(project_pb2.ProjectListRequest(limit=1))
    assert [p.id for p in page1.projects] == ["flytesnacks"] and page1.token
    page2 = admin.stub.ListProjects(project_pb2.ProjectListRequest(limit=1, token=page1.token))
    assert [p.id for p in page2.projects] == ["ml-team"] and not page2.token

    admin.stub.UpdateProject(project_pb2.Project(id="ml-team", state=project_pb2.Project.ARCHIVED))
    assert admin.stub.GetProject(project_pb2.ProjectGetRequest(id="ml-team")).name == "ML team"
    listed = admin.stub.ListProjects(project_pb2.ProjectListRequest(limit=10))
    assert [p.id for p in listed.projects] == ["flytesnacks"]
    archived = admin.stub.ListProjects(project_pb2.ProjectListRequest(limit=10, filters="eq(state,1)"))
    assert [p.id for p in archived.projects] == ["ml-team"]
    # Nothing can be registered into an archived project.
    err = rpc_error(admin.register, double, "v1", "ml-team")
    assert err.code() == grpc.StatusCode.INVALID_ARGUMENT and "archived" in err.details()

    missing = rpc_error(admin.stub.GetProject, project_pb2.ProjectGetRequest(id="nope"))
    assert missing.code() == grpc.StatusCode.NOT_FOUND and "flytesnacks" in missing.details()


# -- tasks ------------------------------------------------------------------------------------------
def test_task_register_get_and_reregister(admin):
    admin.register(double, "v1")
    got = admin.stub.GetTask(common_pb2.ObjectGetRequest(id=task_id(T_DOUBLE, "v1")))
    assert got.id.resource_type == idpb.TASK
    assert got.closure.compiled_task.template.id == task_id(T_DOUBLE, "v1")
    assert got.closure.compiled_task.template.type == "python-task"
    assert got.closure.created_at.seconds > 0

    # Identical re-registration succeeds and changes nothing the client may have cached.
    admin.register(double, "v1")
    again = admin.stub.GetTask(common_pb2.ObjectGetRequest(id=task_id(T_DOUBLE, "v1")))
    assert again.SerializeToString(deterministic=True) == got.SerializeToString(deterministic=True)

    # A different task under the same version is refused with a message that says what to do.
    changed = spec_of(double, "v1")
    changed.template.container.args.append("--changed")
    err = rpc_error(admin.stub.CreateTask, task_pb2.TaskCreateRequest(id=changed.template.id, spec=changed))
    assert err.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert "different content" in err.details() and "new version" in err.details()


def test_task_bad_ids(admin):
    spec = spec_of(double, "v1")

    def create(**parts):
        ident = task_id(T_DOUBLE, "v1")
        for k, v in parts.items():
            setattr(ident, k, v)
        return rpc_error(admin.stub.CreateTask, task_pb2.TaskCreateRequest(id=ident, spec=spec))

    err = create(version="")
    assert err.code() == grpc.StatusCode.INVALID_ARGUMENT and "version" in err.details()
    assert create(name="").code() == grpc.StatusCode.INVALID_ARGUMENT
    err = create(domain="qa")
    assert err.code() == grpc.StatusCode.INVALID_ARGUMENT and "development, staging, production" in err.details()
    err = create(project="nope")
    assert err.code() == grpc.StatusCode.NOT_FOUND and "flytesnacks" in err.details()
    err = create(resource_type=idpb.WORKFLOW)
    assert err.code() == grpc.StatusCode.INVALID_ARGUMENT

    bad = task_pb2.TaskSpec()
    bad.CopyFrom(spec)
    bad.template.ClearField("interface")
    err = rpc_error(admin.stub.CreateTask, task_pb2.TaskCreateRequest(id=task_id(T_DOUBLE, "v1"), spec=bad))
    assert err.code() == grpc.StatusCode.INVALID_ARGUMENT

    err = rpc_error(admin.stub.GetTask, common_pb2.ObjectGetRequest(id=task_id(T_DOUBLE, "v9")))
    assert err.code() == grpc.StatusCode.NOT_FOUND and T_DOUBLE in err.details()


def test_concurrent_identical_registration(admin):
    spec = spec_of(greet, "v1")
    request = task_pb2.TaskCreateRequest(id=spec.template.id, spec=spec)
    with futures.ThreadPoolExecutor(8) as pool:
        results = list(pool.map(lambda _: admin.stub.CreateTask(request), range(8)))
    assert len(results) == 8


def test_list_tasks_versions_names_filters_and_pages(admin):
    for version in ("v1", "v2", "v3"):
        admin.register(double, version)
    admin.register(greet, "v1")
    ident = common_pb2.NamedEntityIdentifier(project=P, domain=D, name=T_DOUBLE)
    newest = admin.stub.ListTasks(common_pb2.ResourceListRequest(
        id=ident, limit=1, sort_by=common_pb2.Sort(key="created_at", direction=common_pb2.Sort.DESCENDING)))
    assert [t.id.version for t in newest.tasks] == ["v3"] and newest.token
    rest = admin.stub.ListTasks(common_pb2.ResourceListRequest(
        id=ident, limit=5, token=newest.token,
        sort_by=common_pb2.Sort(key="created_at", direction=common_pb2.Sort.DESCENDING)))
    assert [t.id.version for t in rest.tasks] == ["v2", "v1"] and rest.token == ""

    by_version = admin.stub.ListTasks(common_pb2.ResourceListRequest(
        id=common_pb2.NamedEntityIdentifier(project=P, domain=D), limit=10, filters="eq(version,v1)"))
    assert sorted(t.id.name for t in by_version.tasks) == sorted([T_DOUBLE, T_GREET])
    assert all(t.closure.compiled_task.template.id.version == "v1" for t in by_version.tasks)

    names = admin.stub.ListTaskIds(common_pb2.NamedEntityIdentifierListRequest(project=P, domain=D, limit=10))
    assert [e.name for e in names.entities] == sorted([T_DOUBLE, T_GREET])

    err = rpc_error(admin.stub.ListTasks, common_pb2.ResourceListRequest(id=ident, limit=1, filters="eq(colour,red)"))
    assert err.code() == grpc.StatusCode.INVALID_ARGUMENT and "filterable fields" in err.details()
    err = rpc_error(admin.stub.ListTasks, common_pb2.ResourceListRequest(id=ident, limit=1, token="x"))
    assert err.code() == grpc.StatusCode.INVALID_ARGUMENT


# -- workflows ----------------------------------------------------------------------------------------
def test_workflow_register_get_and_compile_errors(admin):
    admin.register(pipeline, "v1")
    wf = admin.stub.GetWorkflow(common_pb2.ObjectGetRequest(
        id=idpb.Identifier(resource_type=idpb.WORKFLOW, project=P, domain=D, name=WF, version="v1")))
    compiled = wf.closure.compiled_workflow
    assert compiled.primary.template.id.name == WF
    assert [t.template.id.name for t in compiled.tasks] == [T_DOUBLE]
    assert {n.id for n in compiled.primary.template.nodes} >= {"start-node", "end-node", "n0", "n1"}
    listed = admin.stub.ListWorkflows(common_pb2.ResourceListRequest(
        id=common_pb2.NamedEntityIdentifier(project=P, domain=D, name=WF), limit=10))
    assert [w.id.version for w in listed.workflows] == ["v1"]
    ids = admin.stub.ListWorkflowIds(common_pb2.NamedEntityIdentifierListRequest(project=P, domain=D, limit=10))
    assert [e.name for e in ids.entities] == [WF]

    # A workflow whose tasks were never registered names them.
    spec = spec_of(pipeline, "v2")
    err = rpc_error(admin.stub.CreateWorkflow, workflow_pb2.WorkflowCreateRequest(id=spec.template.id, spec=spec))
    assert err.code() == grpc.StatusCode.NOT_FOUND and f"{T_DOUBLE}@v2" in err.details()

    # A binding to an output that does not exist does not compile; the message carries the compiler's issue.
    spec = spec_of(pipeline, "v1")
    spec.template.id.version = "broken"
    spec.template.nodes[1].inputs[0].binding.promise.var = "no_such_output"
    err = rpc_error(admin.stub.CreateWorkflow, workflow_pb2.WorkflowCreateRequest(id=spec.template.id, spec=spec))
    assert err.code() == grpc.StatusCode.INVALID_ARGUMENT and "no_such_output" in err.details()


def test_flyte_remote_fetches_latest_versions(admin):
    remote = admin.remote()
    for version in ("v1", "v2"):
        # flytekit writes the version into the settings it is given: a fresh object per call.
        settings = SerializationSettings(image_config=ImageConfig.auto_default_image(), project=P, domain=D)
        remote.register_workflow(pipeline, serialization_settings=settings, version=version)
    t = remote.fetch_task(name=T_DOUBLE)
    assert t.id.version == "v2" and "x" in t.interface.inputs
    wf = remote.fetch_workflow(name=WF, version="v1")
    assert wf.id.version == "v1" and [n.id for n in wf.nodes] == ["n0", "n1"]
    lp = remote.fetch_launch_plan(name=WF)
    assert lp.id.version == "v2" and "x" in lp.interface.inputs


def _create_workflow(admin, spec: workflow_pb2.WorkflowSpec) -> None:
    admin.stub.CreateWorkflow(workflow_pb2.WorkflowCreateRequest(id=spec.template.id, spec=spec))


def _branchy_id(version: str) -> idpb.Identifier:
    return idpb.Identifier(resource_type=idpb.WORKFLOW, project=P, domain=D, name=WF_BRANCHY, version=version)


def test_reregistration_ignores_upstream_order_inside_branches(admin):
    """flytekit lists a node's upstream nodes from a Python set; running the same program again must
    re-register cleanly whatever order that process produced, in arms, nested arms and subworkflows."""
    admin.register(branchy, "v1")
    got = admin.stub.GetWorkflow(common_pb2.ObjectGetRequest(id=_branchy_id("v1")))
    flytekit_order = spec_of(branchy, "v1")
    ascending, descending = reorder_upstreams(flytekit_order), reorder_upstreams(flytekit_order, descending=True)
    # Both orders of every two-element list: at least one differs from what flytekit produced here.
    assert ascending.SerializeToString(deterministic=True) != descending.SerializeToString(deterministic=True)
    nested_arm = descending.template.nodes[2].branch_node.if_else.case.then_node.branch_node.if_else.case.then_node
    assert list(nested_arm.upstream_node_ids) == ["n1", "n0"]
    assert [list(w.nodes[2].upstream_node_ids) for w in descending.sub_workflows] == [["n1", "n0"]] * 2

    for spec in (ascending, descending):
        _create_workflow(admin, spec)
    again = admin.stub.GetWorkflow(common_pb2.ObjectGetRequest(id=_branchy_id("v1")))
    assert again.SerializeToString(deterministic=True) == got.SerializeToString(deterministic=True)


def test_reregistration_still_refuses_real_differences_inside_branches(admin):
    admin.register(branchy, "v1")
    retried = reorder_upstreams(spec_of(branchy, "v1"), descending=True)
    nested_arm = retried.template.nodes[2].branch_node.if_else.case.then_node.branch_node.if_else.case.then_node
    nested_arm.metadata.retries.retries = 3
    fewer = spec_of(branchy, "v1")
    sub_node = fewer.sub_workflows[0].nodes[2]
    sub_node.upstream_node_ids.remove("n0")
    for spec in (retried, fewer):
        err = rpc_error(admin.stub.CreateWorkflow, workflow_pb2.WorkflowCreateRequest(id=spec.template.id, spec=spec))
        assert err.code() == grpc.StatusCode.INVALID_ARGUMENT
        assert "different content" in err.details() and "new version" in err.details()


def test_reregistration_accepts_rows_stored_with_the_order_sensitive_digest(admin):
    """A workflow registered before digests were canonical holds a digest of the spec as it came."""
    admin.register(branchy, "v1")
    stored = reorder_upstreams(spec_of(branchy, "v1"), descending=True)
    stored.template.id.CopyFrom(_branchy_id("v1"))
    with admin.ctx.db.session() as session:
        row = session.get(Workflow, (P, D, WF_BRANCHY, "v1"))
        row.spec_pb = stored.SerializeToString()
        row.digest = digest(stored.template, *stored.sub_workflows)
    _create_workflow(admin, reorder_upstreams(spec_of(branchy, "v1")))
