"""Repository functions for registered entities: projects, tasks, workflows, launch plans, named entities.

Rows hold serialized flyteidl messages; these functions turn rows into the admin
messages the API returns, so every reader (admin, executions, console) sees one
shape. Versioned entities are written once and never changed, except a launch
plan's state (ACTIVE/INACTIVE), which lives in its own column as in FlyteAdmin.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime
from typing import Any

from flyteidl.admin import common_pb2, launch_plan_pb2, project_pb2, task_pb2, workflow_pb2
from flyteidl.core import identifier_pb2 as idpb
from google.protobuf.message import Message
from sqlalchemy import select
from sqlalchemy.orm import Session

from flytelite.idl.enums import as_enum
from flytelite.idl.times import to_timestamp
from flytelite.store.models import LaunchPlan, NamedEntity, Project, Task, Workflow

EntityModel = type[Task] | type[Workflow] | type[LaunchPlan]

MODEL_FOR_RESOURCE: dict[int, EntityModel] = {
    idpb.TASK: Task,
    idpb.WORKFLOW: Workflow,
    idpb.LAUNCH_PLAN: LaunchPlan,
}

# flyteidl.admin.LaunchPlanState
LP_INACTIVE = launch_plan_pb2.INACTIVE
LP_ACTIVE = launch_plan_pb2.ACTIVE

# Values of LaunchPlan.schedule_type, spelled as FlyteAdmin spells them.
SCHEDULE_NONE = "NONE"
SCHEDULE_CRON = "CRON"
SCHEDULE_RATE = "RATE"


# -- projects -------------------------------------------------------------------------------------
def get_project(session: Session, identifier: str) -> Project | None:
    return session.get(Project, identifier)


def project_ids(session: Session) -> list[str]:
    return list(session.scalars(select(Project.identifier).order_by(Project.identifier)))


def project_to_proto(row: Project, domains: list[project_pb2.Domain]) -> project_pb2.Project:
    project = project_pb2.Project(id=row.identifier, name=row.name, description=row.description or "",
                                  state=as_enum(project_pb2.Project.ProjectState, row.state), domains=domains)
    if row.labels_pb:
        project.labels.ParseFromString(row.labels_pb)
    return project


# -- versioned entities ---------------------------------------------------------------------------
def entity_row(session: Session, model: EntityModel, ident: idpb.Identifier):
    return session.get(model, (ident.project, ident.domain, ident.name, ident.version))


def entity_exists(session: Session, model: EntityModel, project: str, domain: str, name: str) -> bool:
    query = select(model.version).where(model.project == project, model.domain == domain, model.name == name)
    return session.scalars(query.limit(1)).first() is not None


def _id(resource_type: idpb.ResourceType, row) -> idpb.Identifier:
    return idpb.Identifier(resource_type=resource_type, project=row.project, domain=row.domain,
                           name=row.name, version=row.version)


def task_to_proto(row: Task) -> task_pb2.Task:
    task = task_pb2.Task(id=_id(idpb.TASK, row))
    task.closure.ParseFromString(row.closure_pb)
    spec = task_pb2.TaskSpec.FromString(row.spec_pb)
    task.short_description = spec.description.short_description
    return task


def workflow_to_proto(row: Workflow) -> workflow_pb2.Workflow:
    wf = workflow_pb2.Workflow(id=_id(idpb.WORKFLOW, row))
    wf.closure.ParseFromString(row.closure_pb)
    spec = workflow_pb2.WorkflowSpec.FromString(row.spec_pb)
    wf.short_description = spec.description.short_description
    return wf


def launch_plan_to_proto(row: LaunchPlan) -> launch_plan_pb2.LaunchPlan:
    lp = launch_plan_pb2.LaunchPlan(id=_id(idpb.LAUNCH_PLAN, row))
    lp.spec.ParseFromString(row.spec_pb)
    lp.closure.ParseFromString(row.closure_pb)
    # State and updated_at live in columns: they are the only things about a version that change.
    lp.closure.state = as_enum(launch_plan_pb2.LaunchPlanState, row.state)
    lp.closure.updated_at.CopyFrom(to_timestamp(row.updated_at))
    return lp


TO_PROTO: dict[type, Callable[[Any], Message]] = {
    Task: task_to_proto, Workflow: workflow_to_proto, LaunchPlan: launch_plan_to_proto,
}


def get_task(session: Session, ident: idpb.Identifier) -> task_pb2.Task | None:
    row = entity_row(session, Task, ident)
    return None if row is None else task_to_proto(row)


def get_workflow(session: Session, ident: idpb.Identifier) -> workflow_pb2.Workflow | None:
    row = entity_row(session, Workflow, ident)
    return None if row is None else workflow_to_proto(row)


def get_launch_plan(session: Session, ident: idpb.Identifier) -> launch_plan_pb2.LaunchPlan | None:
    row = entity_row(session, LaunchPlan, ident)
    return None if row is None else launch_plan_to_proto(row)


def get_active_launch_plan(session: Session, project: str, domain: str, name: str) -> LaunchPlan | None:
    query = select(LaunchPlan).where(LaunchPlan.project == project, LaunchPlan.domain == domain,
                                     LaunchPlan.name == name, LaunchPlan.state == LP_ACTIVE)
    return session.scalars(query.limit(1)).first()


def active_launch_plans(session: Session, schedule_types: tuple[str, ...] = ()) -> list[LaunchPlan]:
    """Every active launch plan (optionally only those with one of the schedule types), for the scheduler."""
    query = select(LaunchPlan).where(LaunchPlan.state == LP_ACTIVE)
    if schedule_types:
        query = query.where(LaunchPlan.schedule_type.in_(schedule_types))
    return list(session.scalars(query))


def set_launch_plan_state(session: Session, row: LaunchPlan, state: int, now: datetime) -> LaunchPlan | None:
    """Set one version's state; activating it deactivates any other active version of the same name.

    Returns the formerly active version that was deactivated, if any.
    """
    formerly = None
    if state == LP_ACTIVE:
        others = select(LaunchPlan).where(
            LaunchPlan.project == row.project, LaunchPlan.domain == row.domain, LaunchPlan.name == row.name,
            LaunchPlan.version != row.version, LaunchPlan.state == LP_ACTIVE,
        )
        for other in session.scalars(others):
            other.state = LP_INACTIVE
            other.updated_at = now
            formerly = other
    row.state = state
    row.updated_at = now
    return formerly


# -- named entities -------------------------------------------------------------------------------
def named_entity_metadata(session: Session, resource_type: int, project: str, domain: str,
                          name: str) -> NamedEntity | None:
    return session.get(NamedEntity, (resource_type, project, domain, name))


def set_named_entity_metadata(session: Session, resource_type: int, project: str, domain: str, name: str,
                              description: str | None = None, state: int | None = None) -> NamedEntity:
    """Create or update the metadata of a named entity (e.g. mark a `.flytegen` workflow SYSTEM_GENERATED)."""
    row = named_entity_metadata(session, resource_type, project, domain, name)
    if row is None:
        row = NamedEntity(resource_type=resource_type, project=project, domain=domain, name=name,
                          description="", state=common_pb2.NAMED_ENTITY_ACTIVE)
        session.add(row)
    if description is not None:
        row.description = description
    if state is not None:
        row.state = state
    return row


def named_entity_to_proto(resource_type: idpb.ResourceType, project: str, domain: str, name: str,
                          meta: NamedEntity | None) -> common_pb2.NamedEntity:
    entity = common_pb2.NamedEntity(
        resource_type=resource_type,
        id=common_pb2.NamedEntityIdentifier(project=project, domain=domain, name=name),
    )
    if meta is not None:
        entity.metadata.description = meta.description or ""
        entity.metadata.state = as_enum(common_pb2.NamedEntityState, meta.state)
    return entity
