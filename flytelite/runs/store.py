"""Flyte 2 runs and their actions in the database (store/models.py: Action, and the run's FlyteWorkflow row).

A run is created with its root action `a0` in one transaction; a child joins its run when its parent's process
enqueues it. Names are unique within a run: enqueuing a name again answers ALREADY_EXISTS, which is how a
retried parent finds the children its earlier attempt started.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime

from flyteidl2.common import phase_pb2
from flyteidl2.workflow import run_definition_pb2
from sqlalchemy import Select, bindparam, select
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session

from flytelite.context import Context, ExecutionKey
from flytelite.errors import AlreadyExists, FailedPrecondition, NotFound
from flytelite.store.db import as_utc
from flytelite.store.flyteworkflow import ExecutionSpec
from flytelite.store.models import Action, FlyteWorkflow

Phase = phase_pb2.ActionPhase
ROOT = "a0"
# Names in one IN (...) of a query (SQLite allows 32766 parameters; PostgreSQL's plans stay small).
_IN_CHUNK = 500
TERMINAL = frozenset({Phase.ACTION_PHASE_SUCCEEDED, Phase.ACTION_PHASE_FAILED, Phase.ACTION_PHASE_ABORTED,
                      Phase.ACTION_PHASE_TIMED_OUT, Phase.ACTION_PHASE_RECOVERED})


def run_base(ctx: Context, key: ExecutionKey) -> str:
    """Where a run's actions write: `<run base>/<action>/<attempt>/` (attempts counted from 1)."""
    return ctx.blobs.execution_dir(*key)


def attempt_prefix(ctx: Context, key: ExecutionKey, action: str, attempt: int) -> str:
    return ctx.blobs.join(run_base(ctx, key), action, str(attempt))


def action_kind(spec: run_definition_pb2.ActionSpec) -> str:
    return spec.WhichOneof("spec") or "task"


def code_bundle(template) -> str:
    """The code bundle a task's template runs (its `--tgz` argument); empty when it names none."""
    args = list(template.container.args)
    return args[args.index("--tgz") + 1] if "--tgz" in args[:-1] else ""


def spec(row: Action) -> run_definition_pb2.ActionSpec:
    return run_definition_pb2.ActionSpec.FromString(row.spec_pb)


def created_at(row: Action) -> datetime:
    """When the action was enqueued, in UTC."""
    return as_utc(row.created_at)


def new_action(key: ExecutionKey, spec: run_definition_pb2.ActionSpec, now: datetime, phase: int = Phase.ACTION_PHASE_QUEUED,
               **columns) -> Action:
    return Action(**{"project": key[0], "domain": key[1], "run_name": key[2], "name": spec.action_id.name,
                     "parent": spec.parent_action_name, "kind": action_kind(spec), "spec_pb": spec.SerializeToString(),
                     "task_name": spec.task.id.name or spec.trace.name or spec.condition.name,
                     "task_version": spec.task.id.version,
                     "phase": phase, "done": phase in TERMINAL, "attempts": 0, "state_json": "{}", "output_uri": "",
                     "created_at": now, "updated_at": now, **columns})


def create_run(ctx: Context, key: ExecutionKey, spec: ExecutionSpec, root: run_definition_pb2.ActionSpec) -> Action:
    """Store a new run and its root action; AlreadyExists when a run or execution has the name."""
    now = ctx.clock.now()
    action = new_action(key, root, now, created_by=spec.principal)
    try:
        with ctx.db.session() as s:
            if s.get(FlyteWorkflow, tuple(key)) is not None:
                raise AlreadyExists(f"a run or execution named {key[2]!r} exists in project {key[0]}, domain "
                                    f"{key[1]}: choose another name")
            s.add(FlyteWorkflow(project=key[0], domain=key[1], name=key[2], closure_pb=b"", spec_json=spec.to_json(),
                                status_json="{}", done=False, created_at=now, updated_at=now))
            s.add(action)
    except IntegrityError:
        raise AlreadyExists(f"a run or execution named {key[2]!r} exists in project {key[0]}, domain {key[1]}: "
                            "choose another name") from None
    return action


def enqueue(ctx: Context, key: ExecutionKey, spec: run_definition_pb2.ActionSpec, **columns) -> None:
    """Add an action of `spec` (with the Action row's `columns` besides) to its run; AlreadyExists when the run has
    an action of that name, NotFound without the run or the parent, FailedPrecondition when the parent ended. The
    run's start time is the parent's, unless the spec gives one."""
    now = ctx.clock.now()
    try:
        with ctx.db.session() as s:
            parent = s.get(Action, (*key, spec.parent_action_name))
            if parent is None:
                raise NotFound(f"run {key[2]} in project {key[0]}, domain {key[1]} has no action "
                               f"{spec.parent_action_name!r} to be the parent of {spec.action_id.name!r}")
            if parent.done:
                raise FailedPrecondition(f"action {spec.parent_action_name!r} of run {key[2]} has ended: it can "
                                         f"start no child ({spec.action_id.name!r})")
            if s.get(Action, (*key, spec.action_id.name)) is not None:
                raise AlreadyExists(f"run {key[2]} has an action {spec.action_id.name!r} already")
            if not spec.run_spec.HasField("run_start_time"):
                spec.run_spec.run_start_time.CopyFrom(run_definition_pb2.ActionSpec.FromString(
                    parent.spec_pb).run_spec.run_start_time)
            s.add(new_action(key, spec, now, **columns))
    except IntegrityError:
        raise AlreadyExists(f"run {key[2]} has an action {spec.action_id.name!r} already") from None


def running_creator(session: Session, key: ExecutionKey) -> str | None:
    """Who created a run that is still running ("" when no one signed in did); None when there is no such run or
    it ended (its tasks get no more tokens)."""
    row = session.get(FlyteWorkflow, tuple(key))
    if row is None or row.closure_pb or row.done:
        return None
    return ExecutionSpec.from_json(row.spec_json).principal


def get(ctx: Context, key: ExecutionKey, name: str) -> Action:
    with ctx.db.session() as s:
        found = s.get(Action, (*key, name))
    if found is None:
        raise NotFound(f"there is no action {name!r} in run {key[2]} of project {key[0]}, domain {key[1]}")
    return found


def children(ctx: Context, key: ExecutionKey, parent: str) -> list[Action]:
    with ctx.db.session() as s:
        return list(s.scalars(select(Action).where(
            Action.project == key[0], Action.domain == key[1], Action.run_name == key[2], Action.parent == parent)))


def runs_query(project: str, domain: str) -> Select:
    """The root actions of a project and domain's runs (for a list to filter, order and page)."""
    return select(Action).where(Action.parent == "", Action.project == project, Action.domain == domain,
                                Action.name == ROOT)


def actions_query(key: ExecutionKey) -> Select:
    """A run's actions (for a list to filter, order and page)."""
    return select(Action).where(Action.project == key[0], Action.domain == key[1], Action.run_name == key[2])


def listed(ctx: Context, query: Select, offset: int, limit: int) -> list[Action]:
    with ctx.db.session() as s:
        return list(s.scalars(query.offset(offset).limit(limit)))


def run_exists(ctx: Context, key: ExecutionKey) -> bool:
    with ctx.db.session() as s:
        return s.get(Action, (*key, ROOT)) is not None


def run_actions(ctx: Context, key: ExecutionKey, updated_since: datetime | None = None) -> list[Action]:
    """Every action of a run (changed at or after `updated_since`, when given), the oldest first (none: no such
    run)."""
    query = actions_query(key)
    if updated_since is not None:
        query = query.where(Action.updated_at >= updated_since)
    with ctx.db.session() as s:
        return list(s.scalars(query.order_by(Action.created_at)))


def roots(ctx: Context, project: str = "", domain: str = "", *, updated_since: datetime | None = None,
          created_from: datetime | None = None, created_to: datetime | None = None, phase: int | None = None,
          newest: int | None = None) -> list[Action]:
    """Runs' root actions, of a project and domain (of every project without one): changed at or after
    `updated_since`, created in [`created_from`, `created_to`), in `phase`; the `newest` created, newest first,
    or all by creation."""
    query = runs_query(project, domain) if project else select(Action).where(Action.parent == "", Action.name == ROOT)
    if phase is not None:
        query = query.where(Action.phase == phase)
    if updated_since is not None:
        query = query.where(Action.updated_at >= updated_since)
    if created_from is not None:
        query = query.where(Action.created_at >= created_from)
    if created_to is not None:
        query = query.where(Action.created_at < created_to)
    if newest is not None:
        query = query.order_by(Action.created_at.desc()).limit(newest)
    else:
        query = query.order_by(Action.created_at)
    with ctx.db.session() as s:
        return list(s.scalars(query))


def unfinished(ctx: Context, key: ExecutionKey, names: Iterable[str] | None = None) -> list[Action]:
    """A run's unfinished actions (those of `names` only, when given), the oldest first."""
    query = select(Action).where(Action.project == key[0], Action.domain == key[1], Action.run_name == key[2],
                                 Action.done.is_(False))
    if names is None:
        with ctx.db.session() as s:
            return list(s.scalars(query.order_by(Action.created_at, Action.name)))
    found: list[Action] = []
    wanted = sorted(names)
    with ctx.db.session() as s:
        for start in range(0, len(wanted), _IN_CHUNK):
            found += s.scalars(query.where(Action.name.in_(wanted[start:start + _IN_CHUNK])))
    return sorted(found, key=lambda a: (created_at(a), a.name))


@dataclass(frozen=True)
class Glance:
    """What a round reads of every unfinished action of its run (the rest only of those it looks at)."""

    name: str
    parent: str
    aborting: bool


def glance(ctx: Context, key: ExecutionKey) -> list[Glance]:
    """The run's unfinished actions, at a glance."""
    with ctx.db.session() as s:
        rows = s.execute(select(Action.name, Action.parent, Action.abort_reason).where(
            Action.project == key[0], Action.domain == key[1], Action.run_name == key[2], Action.done.is_(False)))
        return [Glance(name, parent, reason is not None) for name, parent, reason in rows]


def any_unfinished(session: Session, key: ExecutionKey) -> bool:
    return session.scalar(select(Action.name).where(
        Action.project == key[0], Action.domain == key[1], Action.run_name == key[2],
        Action.done.is_(False)).limit(1)) is not None


# What the engine writes of an action after a round: only its own columns, as the API writes abort_reason meanwhile.
ENGINE_COLUMNS = ("phase", "done", "attempts", "state_json", "error_pb", "output_uri", "updated_at", "started_at",
                  "ended_at")
_TABLE = Action.table()
_SAVE = _TABLE.update().where(
    _TABLE.c.project == bindparam("key_project"), _TABLE.c.domain == bindparam("key_domain"),
    _TABLE.c.run_name == bindparam("key_run"), _TABLE.c.name == bindparam("key_name"),
).values({column: bindparam(f"new_{column}") for column in ENGINE_COLUMNS})


def save(session: Session, actions: list[Action]) -> None:
    """Write the engine's columns of `actions` in `session`."""
    if actions:
        session.execute(_SAVE, [{"key_project": a.project, "key_domain": a.domain, "key_run": a.run_name,
                                 "key_name": a.name, **{f"new_{c}": getattr(a, c) for c in ENGINE_COLUMNS}}
                                for a in actions])


def request_abort(ctx: Context, key: ExecutionKey, name: str, reason: str) -> bool:
    """Mark an action to be aborted (the engine stops it and its children); False when it had ended."""
    with ctx.db.session() as s:
        found = s.get(Action, (*key, name))
        if found is None:
            raise NotFound(f"there is no action {name!r} in run {key[2]} of project {key[0]}, domain {key[1]}")
        if found.done:
            return False
        if found.abort_reason is None:
            found.abort_reason = reason
            found.updated_at = ctx.clock.now()
    return True
