"""Launch plans and named entities through FlyteAdmin's gRPC API (see harness.py for the setup)."""

from __future__ import annotations

import grpc
from flyteidl.admin import common_pb2, launch_plan_pb2
from flyteidl.core import identifier_pb2 as idpb
from flytekit.models.core.identifier import Identifier

from flytelite.store import entities as store_entities
from flytelite.store.models import LaunchPlan as LaunchPlanRow
from tests.admin.flows import T_DOUBLE, WF, WF_PARENT, parent, pipeline, pipeline_fixed, pipeline_hourly
from tests.admin.harness import D, P, lp_id, rpc_error, spec_of


# -- launch plans -------------------------------------------------------------------------------------
def test_launch_plan_closure_and_input_checks(admin):
    admin.register(pipeline, "v1")
    admin.register(pipeline_fixed, "v1")
    lp = admin.stub.GetLaunchPlan(common_pb2.ObjectGetRequest(id=lp_id("admin_pipeline_fixed", "v1")))
    assert lp.closure.state == launch_plan_pb2.INACTIVE
    assert dict(lp.closure.expected_inputs.parameters) == {}  # x is fixed
    assert list(lp.closure.expected_outputs.variables) == ["o0"]
    default = admin.stub.GetLaunchPlan(common_pb2.ObjectGetRequest(id=lp_id(WF, "v1")))
    assert not default.closure.expected_inputs.parameters["x"].required
    assert default.closure.expected_inputs.parameters["x"].default.scalar.primitive.integer == 3

    wrong = spec_of(pipeline_fixed, "v1")
    wrong.id.version = "wrong-type"
    wrong.spec.fixed_inputs.literals["x"].scalar.primitive.string_value = "four"
    err = rpc_error(admin.stub.CreateLaunchPlan, launch_plan_pb2.LaunchPlanCreateRequest(id=wrong.id, spec=wrong.spec))
    assert err.code() == grpc.StatusCode.INVALID_ARGUMENT and "fixed input 'x'" in err.details()

    extra = spec_of(pipeline_fixed, "v1")
    extra.id.version = "extra"
    extra.spec.fixed_inputs.literals["nope"].scalar.primitive.integer = 1
    err = rpc_error(admin.stub.CreateLaunchPlan, launch_plan_pb2.LaunchPlanCreateRequest(id=extra.id, spec=extra.spec))
    assert err.code() == grpc.StatusCode.INVALID_ARGUMENT and "'nope'" in err.details()

    orphan = spec_of(pipeline_fixed, "v1")
    orphan.id.version = "orphan"
    orphan.spec.workflow_id.version = "never-registered"
    err = rpc_error(admin.stub.CreateLaunchPlan,
                    launch_plan_pb2.LaunchPlanCreateRequest(id=orphan.id, spec=orphan.spec))
    assert err.code() == grpc.StatusCode.NOT_FOUND and "register the workflow first" in err.details()

    changed = spec_of(pipeline_fixed, "v1")
    changed.spec.fixed_inputs.literals["x"].scalar.primitive.integer = 5
    err = rpc_error(admin.stub.CreateLaunchPlan,
                    launch_plan_pb2.LaunchPlanCreateRequest(id=changed.id, spec=changed.spec))
    assert err.code() == grpc.StatusCode.INVALID_ARGUMENT and "different content" in err.details()


def test_schedules(admin):
    admin.register(pipeline, "v1")
    admin.register(pipeline_hourly, "v1")
    with admin.ctx.db.session() as session:
        row = session.get(LaunchPlanRow, (P, D, "admin_pipeline_hourly", "v1"))
        assert row.schedule_type == "CRON" and row.workflow_name == WF
        assert session.get(LaunchPlanRow, (P, D, WF, "v1")).schedule_type == "NONE"

    # The scheduler finds active scheduled plans through the store.
    admin.remote().activate_launchplan(Identifier.from_flyte_idl(lp_id("admin_pipeline_hourly", "v1")))
    with admin.ctx.db.session() as session:
        scheduled = store_entities.active_launch_plans(session, ("CRON", "RATE"))
        assert [(r.name, r.version) for r in scheduled] == [("admin_pipeline_hourly", "v1")]

    bad = spec_of(pipeline_hourly, "v1")
    bad.id.version = "bad-cron"
    bad.spec.entity_metadata.schedule.cron_schedule.schedule = "every tuesday"
    err = rpc_error(admin.stub.CreateLaunchPlan, launch_plan_pb2.LaunchPlanCreateRequest(id=bad.id, spec=bad.spec))
    assert err.code() == grpc.StatusCode.INVALID_ARGUMENT and "cron" in err.details()

    unbound = spec_of(pipeline_hourly, "v1")
    unbound.id.version = "unbound"
    unbound.spec.default_inputs.parameters["x"].ClearField("default")
    unbound.spec.default_inputs.parameters["x"].required = True
    err = rpc_error(admin.stub.CreateLaunchPlan,
                    launch_plan_pb2.LaunchPlanCreateRequest(id=unbound.id, spec=unbound.spec))
    assert err.code() == grpc.StatusCode.INVALID_ARGUMENT and "'x' is required" in err.details()


def test_activation_keeps_one_active_version(admin):
    admin.register(pipeline, "v1")
    admin.register(pipeline, "v2")
    active = launch_plan_pb2.ActiveLaunchPlanRequest(id=common_pb2.NamedEntityIdentifier(project=P, domain=D, name=WF))
    assert rpc_error(admin.stub.GetActiveLaunchPlan, active).code() == grpc.StatusCode.NOT_FOUND

    remote = admin.remote()
    remote.activate_launchplan(Identifier.from_flyte_idl(lp_id(WF, "v1")))
    assert admin.stub.GetActiveLaunchPlan(active).id.version == "v1"
    remote.activate_launchplan(Identifier.from_flyte_idl(lp_id(WF, "v2")))
    assert admin.stub.GetActiveLaunchPlan(active).id.version == "v2"
    v1 = admin.stub.GetLaunchPlan(common_pb2.ObjectGetRequest(id=lp_id(WF, "v1")))
    assert v1.closure.state == launch_plan_pb2.INACTIVE
    assert remote.fetch_active_launchplan(name=WF).id.version == "v2"

    listed = admin.stub.ListLaunchPlans(common_pb2.ResourceListRequest(
        id=common_pb2.NamedEntityIdentifier(project=P, domain=D), limit=10, filters="eq(state,1)"))
    assert [(lp.id.name, lp.id.version) for lp in listed.launch_plans] == [(WF, "v2")]
    by_wf = admin.stub.ListLaunchPlans(common_pb2.ResourceListRequest(
        id=common_pb2.NamedEntityIdentifier(project=P, domain=D), limit=10, filters=f"eq(workflow.name,{WF})"))
    assert sorted(lp.id.version for lp in by_wf.launch_plans) == ["v1", "v2"]
    act = admin.stub.ListActiveLaunchPlans(launch_plan_pb2.ActiveLaunchPlanListRequest(project=P, domain=D, limit=5))
    assert [lp.id.version for lp in act.launch_plans] == ["v2"]

    remote.deactivate_launchplan(Identifier.from_flyte_idl(lp_id(WF, "v2")))
    assert rpc_error(admin.stub.GetActiveLaunchPlan, active).code() == grpc.StatusCode.NOT_FOUND
    err = rpc_error(admin.stub.UpdateLaunchPlan, launch_plan_pb2.LaunchPlanUpdateRequest(id=lp_id(WF, "v9"), state=1))
    assert err.code() == grpc.StatusCode.NOT_FOUND


def test_launch_plan_node_workflow(admin):
    admin.register(parent, "v1")
    wf = admin.stub.GetWorkflow(common_pb2.ObjectGetRequest(
        id=idpb.Identifier(resource_type=idpb.WORKFLOW, project=P, domain=D, name=WF_PARENT,
                           version="v1")))
    node = next(n for n in wf.closure.compiled_workflow.primary.template.nodes if n.id == "n0")
    assert node.workflow_node.launchplan_ref.name == "admin_pipeline_fixed"
    fetched = admin.remote().fetch_workflow(name=WF_PARENT, version="v1")
    assert fetched.id.version == "v1"
    ids = admin.stub.ListLaunchPlanIds(common_pb2.NamedEntityIdentifierListRequest(project=P, domain=D, limit=10))
    assert {e.name for e in ids.entities} == {"admin_pipeline_fixed", WF_PARENT}


# -- named entities -----------------------------------------------------------------------------------
def test_named_entities(admin):
    admin.register(pipeline, "v1")
    ident = common_pb2.NamedEntityIdentifier(project=P, domain=D, name=WF)
    got = admin.stub.GetNamedEntity(common_pb2.NamedEntityGetRequest(resource_type=idpb.WORKFLOW, id=ident))
    assert got.id.name == WF and got.metadata.state == common_pb2.NAMED_ENTITY_ACTIVE
    admin.client.update_named_entity(idpb.WORKFLOW, _flytekit_named_id(ident), _flytekit_metadata("my pipeline"))
    got = admin.stub.GetNamedEntity(common_pb2.NamedEntityGetRequest(resource_type=idpb.WORKFLOW, id=ident))
    assert got.metadata.description == "my pipeline"

    listed = admin.stub.ListNamedEntities(common_pb2.NamedEntityListRequest(
        resource_type=idpb.WORKFLOW, project=P, domain=D, limit=10))
    assert [(e.id.name, e.metadata.description) for e in listed.entities] == [(WF, "my pipeline")]
    archived = admin.stub.ListNamedEntities(common_pb2.NamedEntityListRequest(
        resource_type=idpb.WORKFLOW, project=P, domain=D, limit=10, filters="eq(state,1)"))
    assert list(archived.entities) == []
    tasks = admin.stub.ListNamedEntities(common_pb2.NamedEntityListRequest(
        resource_type=idpb.TASK, project=P, domain=D, limit=10, filters="eq(state,0)"))
    assert [e.id.name for e in tasks.entities] == [T_DOUBLE]

    missing = common_pb2.NamedEntityIdentifier(project=P, domain=D, name="nope")
    err = rpc_error(admin.stub.GetNamedEntity, common_pb2.NamedEntityGetRequest(resource_type=idpb.TASK, id=missing))
    assert err.code() == grpc.StatusCode.NOT_FOUND


def _flytekit_named_id(ident):
    from flytekit.models.common import NamedEntityIdentifier

    return NamedEntityIdentifier(ident.project, ident.domain, ident.name)


def _flytekit_metadata(description: str):
    from flytekit.models.admin.common import Sort  # noqa: F401  (keeps flytekit's admin models importable)
    from flytekit.models.named_entity import NamedEntityMetadata, NamedEntityState

    return NamedEntityMetadata(description, NamedEntityState.ACTIVE)
