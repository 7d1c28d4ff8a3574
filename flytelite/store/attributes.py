"""Matchable attributes (FlyteAdmin's resources): stored per level, matched most specific first.

A row's level is which of project, domain, workflow and launch plan it names ("" is a wildcard); its priority
orders the levels as FlyteAdmin's do: a launch plan's attributes before a workflow's, a workflow's before its
project and domain's, those before the project's.
"""

from __future__ import annotations

from datetime import datetime

from flyteidl.admin import matchable_resource_pb2
from sqlalchemy import delete, select
from sqlalchemy.orm import Session

from flytelite.store.models import MatchableAttribute

PROJECT, PROJECT_DOMAIN, WORKFLOW, LAUNCH_PLAN = 5, 10, 100, 1000
# MatchingAttributes' `target` fields in MatchableResource's order (TASK_RESOURCE = 0 ... CLUSTER_ASSIGNMENT = 7).
TARGETS = [f.name for f in matchable_resource_pb2.MatchingAttributes.DESCRIPTOR.oneofs_by_name["target"].fields]


def resource_type(attributes: matchable_resource_pb2.MatchingAttributes) -> int | None:
    """The MatchableResource an attributes message sets (None: it sets none)."""
    which = attributes.WhichOneof("target")
    return TARGETS.index(which) if which else None


def level_priority(domain: str, workflow: str, launch_plan: str) -> int:
    return LAUNCH_PLAN if launch_plan else WORKFLOW if workflow else PROJECT_DOMAIN if domain else PROJECT


def get(session: Session, kind: int, project: str, domain: str = "", workflow: str = "",
        launch_plan: str = "") -> matchable_resource_pb2.MatchingAttributes | None:
    """The attributes stored at exactly this level."""
    row = session.get(MatchableAttribute, (kind, project, domain, workflow, launch_plan))
    return matchable_resource_pb2.MatchingAttributes.FromString(row.attributes_pb) if row is not None else None


def put(session: Session, kind: int, attributes: matchable_resource_pb2.MatchingAttributes, now: datetime,
        project: str, domain: str = "", workflow: str = "", launch_plan: str = "") -> None:
    row = session.get(MatchableAttribute, (kind, project, domain, workflow, launch_plan))
    if row is None:
        session.add(MatchableAttribute(resource_type=kind, project=project, domain=domain, workflow=workflow,
                                       launch_plan=launch_plan, priority=level_priority(domain, workflow, launch_plan),
                                       attributes_pb=attributes.SerializeToString(), updated_at=now))
    else:
        row.attributes_pb, row.updated_at = attributes.SerializeToString(), now


def remove(session: Session, kind: int, project: str, domain: str = "", workflow: str = "",
           launch_plan: str = "") -> bool:
    """Delete the attributes of exactly this level; False when there were none."""
    result = session.execute(delete(MatchableAttribute).where(
        MatchableAttribute.resource_type == kind, MatchableAttribute.project == project,
        MatchableAttribute.domain == domain, MatchableAttribute.workflow == workflow,
        MatchableAttribute.launch_plan == launch_plan))
    return bool(result.rowcount)  # type: ignore[attr-defined]


def match(session: Session, kinds: list[int], project: str, domain: str, workflow: str = "",
          launch_plan: str = "") -> dict[int, matchable_resource_pb2.MatchingAttributes]:
    """For each resource type, the most specific attributes that apply to this project, domain, workflow and
    launch plan."""
    rows = session.scalars(select(MatchableAttribute).where(
        MatchableAttribute.resource_type.in_(kinds), MatchableAttribute.project.in_([project, ""]),
        MatchableAttribute.domain.in_([domain, ""]), MatchableAttribute.workflow.in_([workflow, ""]),
        MatchableAttribute.launch_plan.in_([launch_plan, ""])).order_by(MatchableAttribute.priority.desc()))
    found: dict[int, matchable_resource_pb2.MatchingAttributes] = {}
    for row in rows:
        if row.resource_type not in found:
            found[row.resource_type] = matchable_resource_pb2.MatchingAttributes.FromString(row.attributes_pb)
    return found


def all_of(session: Session, kind: int) -> list[MatchableAttribute]:
    """Every level's attributes of one resource type, most specific first."""
    return list(session.scalars(select(MatchableAttribute).where(MatchableAttribute.resource_type == kind)
                                .order_by(MatchableAttribute.priority.desc(), MatchableAttribute.project,
                                          MatchableAttribute.domain, MatchableAttribute.workflow)))
