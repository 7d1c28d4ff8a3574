"""Launch plans in FlyteAdmin's API: register against a workflow's interface, get, list, (de)activate.

A launch plan's inputs are checked against its workflow: fixed inputs must be
workflow inputs with values of the right type, default inputs must be workflow
inputs of a castable type. The stored spec's default_inputs are the plan's
expected inputs (workflow inputs with the plan's defaults, minus fixed ones),
as FlyteAdmin stores them. One version per name may be ACTIVE.
"""

from __future__ import annotations

from flyteidl.admin import common_pb2, launch_plan_pb2
from flyteidl.core import identifier_pb2 as idpb
from flyteidl.core import interface_pb2, literals_pb2, types_pb2
from sqlalchemy import select

from flytelite.admin import filters
from flytelite.admin.entity_common import (
    digest,
    entity_fields,
    insert_once,
    list_entities,
    list_entity_ids,
    not_found,
    typed_id,
    validate_identifier,
    validate_named_id,
    validate_project_domain,
)
from flytelite.admin.filters import Field, enum_value, parse_time
from flytelite.compiler import literal_matches_type, literal_type_castable, type_to_str
from flytelite.context import Context
from flytelite.errors import InvalidArgument, NotFound
from flytelite.idl.ids import describe
from flytelite.idl.schedules import validate_schedule
from flytelite.idl.times import to_timestamp
from flytelite.store import entities
from flytelite.store.models import LaunchPlan

LP_FIELDS = entity_fields(
    LaunchPlan,
    state=Field(LaunchPlan.state, enum_value(launch_plan_pb2.LaunchPlanState)),
    updated_at=Field(LaunchPlan.updated_at, parse_time),
    schedule_type=Field(LaunchPlan.schedule_type),
    # The console lists a workflow's launch plans with eq(workflow.name, ...).
    **{"workflow.name": Field(LaunchPlan.workflow_name),
       "workflow.version": Field(LaunchPlan.workflow_version),
       "workflow_name": Field(LaunchPlan.workflow_name),
       "workflow_version": Field(LaunchPlan.workflow_version),
       "launch_plan.name": Field(LaunchPlan.name),
       "launch_plan.version": Field(LaunchPlan.version)},
)


# -- registration ---------------------------------------------------------------------------------------
def create_launch_plan(ctx: Context, ident: idpb.Identifier, spec: launch_plan_pb2.LaunchPlanSpec) -> bool:
    """Validate against the workflow and store one launch plan version (INACTIVE); True if new."""
    validate_identifier(ident, idpb.LAUNCH_PLAN)
    ident = typed_id(ident, idpb.LAUNCH_PLAN)
    if not spec.HasField("workflow_id"):
        raise InvalidArgument(f"{describe(ident)}: the launch plan spec names no workflow (workflow_id)")
    validate_identifier(spec.workflow_id, idpb.WORKFLOW)
    wf_id = typed_id(spec.workflow_id, idpb.WORKFLOW)
    with ctx.db.session() as session:
        validate_project_domain(session, ident.project, ident.domain, for_write=True)
        workflow = entities.get_workflow(session, wf_id)
        if workflow is None:
            raise NotFound(f"{describe(ident)} launches {describe(wf_id)}, which does not exist; "
                           f"register the workflow first")
    interface = workflow.closure.compiled_workflow.primary.template.interface

    expected = expected_inputs(ident, interface.inputs, spec.fixed_inputs, spec.default_inputs)
    _validate_schedule(ident, spec, expected)

    stored = launch_plan_pb2.LaunchPlanSpec()
    stored.CopyFrom(spec)
    stored.workflow_id.CopyFrom(wf_id)
    stored.default_inputs.CopyFrom(expected)
    now = ctx.clock.now()
    closure = launch_plan_pb2.LaunchPlanClosure(
        state=entities.LP_INACTIVE, expected_inputs=expected, expected_outputs=interface.outputs,
        created_at=to_timestamp(now), updated_at=to_timestamp(now),
    )
    lp_digest = digest(stored)
    return insert_once(
        ctx, LaunchPlan, ident, lp_digest,
        lambda: LaunchPlan(
            project=ident.project, domain=ident.domain, name=ident.name, version=ident.version,
            digest=lp_digest, spec_pb=stored.SerializeToString(), closure_pb=closure.SerializeToString(),
            created_at=now, updated_at=now, workflow_name=wf_id.name, workflow_version=wf_id.version,
            state=entities.LP_INACTIVE, schedule_type=schedule_type(stored),
        ),
    )


def expected_inputs(ident: idpb.Identifier, wf_inputs: interface_pb2.VariableMap,
                    fixed: literals_pb2.LiteralMap | None,
                    defaults: interface_pb2.ParameterMap | None) -> interface_pb2.ParameterMap:
    """The inputs an execution of this plan takes: workflow inputs, the plan's defaults, minus fixed inputs."""
    variables = wf_inputs.variables
    fixed_literals = fixed.literals if fixed is not None else {}
    default_params = defaults.parameters if defaults is not None else {}
    problems = []
    for name, param in sorted(default_params.items()):
        if name not in variables:
            problems.append(f"default input {name!r} is not an input of the workflow{_known(variables)}")
        elif not literal_type_castable(param.var.type, variables[name].type):
            problems.append(f"default input {name!r} has type {type_to_str(param.var.type)} but the workflow "
                            f"expects {type_to_str(variables[name].type)}")
    for name, literal in sorted(fixed_literals.items()):
        if name not in variables:
            problems.append(f"fixed input {name!r} is not an input of the workflow{_known(variables)}")
        elif not literal_matches_type(literal, variables[name].type):
            problems.append(f"fixed input {name!r} is not a value of type {type_to_str(variables[name].type)}")
    if problems:
        raise InvalidArgument(f"{describe(ident)} does not fit its workflow's interface: " + "; ".join(problems))

    expected = interface_pb2.ParameterMap()
    for name, var in variables.items():
        if name in default_params:
            expected.parameters[name].CopyFrom(default_params[name])
        elif name not in fixed_literals:
            expected.parameters[name].var.type.CopyFrom(var.type)
            expected.parameters[name].var.description = var.description
            expected.parameters[name].required = True
    return expected


def _known(variables) -> str:
    return f" (inputs: {', '.join(sorted(variables))})" if variables else " (it takes no inputs)"


def schedule_type(spec: launch_plan_pb2.LaunchPlanSpec) -> str:
    schedule = spec.entity_metadata.schedule
    if schedule.cron_expression or schedule.cron_schedule.schedule:
        return entities.SCHEDULE_CRON
    if schedule.rate.value:
        return entities.SCHEDULE_RATE
    return entities.SCHEDULE_NONE


def _validate_schedule(ident: idpb.Identifier, spec: launch_plan_pb2.LaunchPlanSpec,
                       expected: interface_pb2.ParameterMap) -> None:
    kind = schedule_type(spec)
    if kind == entities.SCHEDULE_NONE:
        if spec.entity_metadata.schedule.HasField("rate"):
            raise InvalidArgument(f"{describe(ident)}: a fixed-rate schedule needs a rate greater than 0")
        return
    schedule = spec.entity_metadata.schedule
    try:
        validate_schedule(schedule)
    except InvalidArgument as exc:
        raise InvalidArgument(f"{describe(ident)}: {exc}") from None
    kickoff = schedule.kickoff_time_input_arg
    for name, param in sorted(expected.parameters.items()):
        if param.required and name != kickoff:
            raise InvalidArgument(f"{describe(ident)} has a schedule but its input {name!r} is required and "
                                  f"has no value; give it a default or a fixed value")
    if kickoff:
        kickoff_param = expected.parameters.get(kickoff)
        if kickoff_param is None:
            raise InvalidArgument(f"{describe(ident)}: kickoff_time_input_arg {kickoff!r} is not a free input "
                                  f"of the launch plan")
        if kickoff_param.var.type.simple != types_pb2.DATETIME:
            raise InvalidArgument(f"{describe(ident)}: kickoff_time_input_arg {kickoff!r} must be a datetime "
                                  f"input, not {type_to_str(kickoff_param.var.type)}")


# -- reads and state ------------------------------------------------------------------------------------
def get_launch_plan(ctx: Context, ident: idpb.Identifier) -> launch_plan_pb2.LaunchPlan:
    validate_identifier(ident, idpb.LAUNCH_PLAN)
    with ctx.db.session() as session:
        lp = entities.get_launch_plan(session, ident)
        if lp is None:
            raise not_found(session, typed_id(ident, idpb.LAUNCH_PLAN))
        return lp


def update_launch_plan_state(ctx: Context, ident: idpb.Identifier, state: int) -> None:
    validate_identifier(ident, idpb.LAUNCH_PLAN)
    if state not in (entities.LP_ACTIVE, entities.LP_INACTIVE):
        raise InvalidArgument(f"unknown launch plan state {state}; use ACTIVE (1) or INACTIVE (0)")
    with ctx.db.session() as session:
        row = entities.entity_row(session, LaunchPlan, ident)
        if row is None:
            raise not_found(session, typed_id(ident, idpb.LAUNCH_PLAN))
        entities.set_launch_plan_state(session, row, state, ctx.clock.now())


class LaunchPlansApi:
    ctx: Context

    def CreateLaunchPlan(self, request: launch_plan_pb2.LaunchPlanCreateRequest,
                         context) -> launch_plan_pb2.LaunchPlanCreateResponse:
        validate_identifier(request.id, idpb.LAUNCH_PLAN, request.HasField("id"))
        create_launch_plan(self.ctx, request.id, request.spec)
        return launch_plan_pb2.LaunchPlanCreateResponse()

    def GetLaunchPlan(self, request: common_pb2.ObjectGetRequest, context) -> launch_plan_pb2.LaunchPlan:
        return get_launch_plan(self.ctx, request.id)

    def ListLaunchPlans(self, request: common_pb2.ResourceListRequest, context) -> launch_plan_pb2.LaunchPlanList:
        lps, token = list_entities(self.ctx, LaunchPlan, request, LP_FIELDS)
        return launch_plan_pb2.LaunchPlanList(launch_plans=lps, token=token)

    def ListLaunchPlanIds(self, request: common_pb2.NamedEntityIdentifierListRequest,
                          context) -> common_pb2.NamedEntityIdentifierList:
        return list_entity_ids(self.ctx, LaunchPlan, request, LP_FIELDS)

    def GetActiveLaunchPlan(self, request: launch_plan_pb2.ActiveLaunchPlanRequest,
                            context) -> launch_plan_pb2.LaunchPlan:
        ident = request.id
        validate_named_id(ident.project, ident.domain, ident.name, "GetActiveLaunchPlan")
        with self.ctx.db.session() as session:
            row = entities.get_active_launch_plan(session, ident.project, ident.domain, ident.name)
            if row is None:
                raise NotFound(f"launch plan {ident.project}/{ident.domain}/{ident.name} has no active version; "
                               f"activate one (UpdateLaunchPlan, or pyflyte register --activate-launchplans)")
            return entities.launch_plan_to_proto(row)

    def ListActiveLaunchPlans(self, request: launch_plan_pb2.ActiveLaunchPlanListRequest,
                              context) -> launch_plan_pb2.LaunchPlanList:
        validate_named_id(request.project, request.domain, None, "ListActiveLaunchPlans")
        with self.ctx.db.session() as session:
            query = select(LaunchPlan).where(LaunchPlan.project == request.project,
                                             LaunchPlan.domain == request.domain,
                                             LaunchPlan.state == entities.LP_ACTIVE)
            sort_by = request.sort_by if request.HasField("sort_by") and request.sort_by.key else None
            query = filters.apply_sort(query, sort_by, LP_FIELDS, default=LaunchPlan.updated_at)
            rows, token = filters.page(session, query.order_by(LaunchPlan.name, LaunchPlan.version), request.limit,
                                       request.token)
            return launch_plan_pb2.LaunchPlanList(
                launch_plans=[entities.launch_plan_to_proto(r) for r in rows], token=token)

    def UpdateLaunchPlan(self, request: launch_plan_pb2.LaunchPlanUpdateRequest,
                         context) -> launch_plan_pb2.LaunchPlanUpdateResponse:
        update_launch_plan_state(self.ctx, request.id, request.state)
        return launch_plan_pb2.LaunchPlanUpdateResponse()
