"""Workflows in FlyteAdmin's API: register (resolve references, compile, store once), get, list."""

from __future__ import annotations

from collections.abc import Iterable

from flyteidl.admin import common_pb2, launch_plan_pb2, workflow_pb2
from flyteidl.core import compiler_pb2
from flyteidl.core import identifier_pb2 as idpb
from flyteidl.core import workflow_pb2 as core_workflow_pb2

from flytelite.admin.entity_common import (
    digest,
    entity_fields,
    insert_once,
    list_entities,
    list_entity_ids,
    not_found,
    typed_id,
    validate_identifier,
    validate_project_domain,
)
from flytelite.compiler import CompileError, compile_workflow, get_requirements
from flytelite.context import Context
from flytelite.errors import InvalidArgument, NotFound
from flytelite.idl.canonical import canonical_workflow
from flytelite.idl.ids import describe
from flytelite.idl.times import to_timestamp
from flytelite.store import entities
from flytelite.store.models import Workflow

WORKFLOW_FIELDS = entity_fields(Workflow)


def create_workflow(ctx: Context, ident: idpb.Identifier, spec: workflow_pb2.WorkflowSpec) -> bool:
    """Validate, compile and store one workflow version; True if new, False for an identical re-registration."""
    validate_identifier(ident, idpb.WORKFLOW)
    ident = typed_id(ident, idpb.WORKFLOW)
    with ctx.db.session() as session:
        validate_project_domain(session, ident.project, ident.domain, for_write=True)
    if not spec.HasField("template"):
        raise InvalidArgument(f"{describe(ident)}: the workflow spec has no template")

    template = workflow_pb2.WorkflowSpec().template
    template.CopyFrom(spec.template)
    # The stored template carries the id it was registered under, as FlyteAdmin does.
    template.id.CopyFrom(ident)
    subworkflows = list(spec.sub_workflows)
    try:
        reqs = get_requirements(template, subworkflows)
        tasks, launch_plans = _load_references(ctx, ident, reqs.task_ids, reqs.launch_plan_ids)
        compiled = compile_workflow(template, subworkflows, tasks, launch_plans)
    except CompileError as exc:
        raise InvalidArgument(f"{describe(ident)} does not compile:\n{exc}") from None

    stored = workflow_pb2.WorkflowSpec()
    stored.CopyFrom(spec)
    stored.template.CopyFrom(template)
    now = ctx.clock.now()
    closure = workflow_pb2.WorkflowClosure(compiled_workflow=compiled, created_at=to_timestamp(now))
    wf_digest = workflow_digest(template, subworkflows)
    return insert_once(
        ctx, Workflow, ident, wf_digest,
        lambda: Workflow(project=ident.project, domain=ident.domain, name=ident.name, version=ident.version,
                         digest=wf_digest, spec_pb=stored.SerializeToString(),
                         closure_pb=closure.SerializeToString(), created_at=now),
        redigest=_stored_digest,
    )


def workflow_digest(template: core_workflow_pb2.WorkflowTemplate,
                    subworkflows: Iterable[core_workflow_pb2.WorkflowTemplate]) -> str:
    """What decides whether two registrations of a workflow version are the same.

    Referenced tasks and launch plans are immutable versions, so the template and subworkflows decide
    the compiled result; the description is not part of a workflow's identity. Their canonical form is
    hashed: flytekit lists upstream nodes in a different order in each process (FlyteAdmin gets the same
    effect by hashing the compiled closure, whose compiler sorts them).
    """
    return digest(*canonical_workflow(template, subworkflows))


def _stored_digest(row: Workflow) -> str:
    spec = workflow_pb2.WorkflowSpec.FromString(row.spec_pb)
    return workflow_digest(spec.template, spec.sub_workflows)


def _load_references(
    ctx: Context, ident: idpb.Identifier, task_ids: list[idpb.Identifier], launch_plan_ids: list[idpb.Identifier]
) -> tuple[list[compiler_pb2.CompiledTask], list[launch_plan_pb2.LaunchPlan]]:
    """The compiled tasks and launch plans a workflow references; every missing one named at once."""
    tasks, launch_plans, missing = [], [], []
    with ctx.db.session() as session:
        for task_id in task_ids:
            task = entities.get_task(session, task_id)
            if task is None:
                missing.append(describe(typed_id(task_id, idpb.TASK)))
            else:
                tasks.append(task.closure.compiled_task)
        for lp_id in launch_plan_ids:
            lp = entities.get_launch_plan(session, lp_id)
            if lp is None:
                missing.append(describe(typed_id(lp_id, idpb.LAUNCH_PLAN)))
            else:
                launch_plans.append(lp)
    if missing:
        raise NotFound(f"{describe(ident)} references entities that are not registered: {'; '.join(missing)}. "
                       f"Register them first (pyflyte register registers a workflow with its tasks).")
    return tasks, launch_plans


def get_workflow(ctx: Context, ident: idpb.Identifier) -> workflow_pb2.Workflow:
    validate_identifier(ident, idpb.WORKFLOW)
    with ctx.db.session() as session:
        wf = entities.get_workflow(session, ident)
        if wf is None:
            raise not_found(session, typed_id(ident, idpb.WORKFLOW))
        return wf


class WorkflowsApi:
    ctx: Context

    def CreateWorkflow(self, request: workflow_pb2.WorkflowCreateRequest,
                       context) -> workflow_pb2.WorkflowCreateResponse:
        validate_identifier(request.id, idpb.WORKFLOW, request.HasField("id"))
        create_workflow(self.ctx, request.id, request.spec)
        return workflow_pb2.WorkflowCreateResponse()

    def GetWorkflow(self, request: common_pb2.ObjectGetRequest, context) -> workflow_pb2.Workflow:
        return get_workflow(self.ctx, request.id)

    def ListWorkflows(self, request: common_pb2.ResourceListRequest, context) -> workflow_pb2.WorkflowList:
        workflows, token = list_entities(self.ctx, Workflow, request, WORKFLOW_FIELDS)
        for wf in workflows:
            # As FlyteAdmin: lists carry no compiled workflow (GetWorkflow does); they would be huge.
            wf.closure.ClearField("compiled_workflow")
        return workflow_pb2.WorkflowList(workflows=workflows, token=token)

    def ListWorkflowIds(self, request: common_pb2.NamedEntityIdentifierListRequest,
                        context) -> common_pb2.NamedEntityIdentifierList:
        return list_entity_ids(self.ctx, Workflow, request, WORKFLOW_FIELDS)
