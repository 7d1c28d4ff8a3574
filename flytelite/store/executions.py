"""Repository functions for workflow, node and task executions: look-ups by Flyte identifier.

Each function takes an open session (the caller owns the transaction) and raises
NotFound with the identifier a user would recognise when the row is missing.
"""

from __future__ import annotations

from flyteidl.core import identifier_pb2 as idpb
from sqlalchemy import bindparam, false, func, select, update
from sqlalchemy.orm import Session

from flytelite.errors import NotFound
from flytelite.idl.phases import WORKFLOW_TERMINAL
from flytelite.store.models import Execution, NodeExecution, TaskExecution

# SQLite has no row locks and pysqlite begins a transaction only at the first write: a write that touches no
# row takes the database's write lock. Built once, on the table (no ORM objects to synchronize).
_TAKE_SQLITE_WRITE_LOCK = update(Execution.table()).where(false()).values(phase=Execution.table().c.phase)


def lock_for_update(session: Session) -> None:
    """On SQLite (no row locks), take the database's write lock now, before a read that a `FOR UPDATE`
    would lock on PostgreSQL; nothing on PostgreSQL."""
    if session.get_bind().dialect.name == "sqlite":
        session.execute(_TAKE_SQLITE_WRITE_LOCK)


def lock_launch_plan(session: Session, project: str, domain: str, name: str) -> None:
    """Hold every version of a launch plan until the transaction ends, so that one caller at a time counts its
    executions and adds one (on SQLite, the database's write lock; on PostgreSQL, an advisory lock of the
    name, which also orders the replicas)."""
    if session.get_bind().dialect.name == "sqlite":
        lock_for_update(session)
    else:
        session.execute(select(func.pg_advisory_xact_lock(func.hashtextextended(f"{project}/{domain}/{name}", 0))))


def count_unfinished(session: Session, project: str, domain: str, launch_plan: str) -> int:
    """Executions of a launch plan (any version) that have not finished, those not picked up yet included."""
    return session.scalar(select(func.count()).select_from(Execution).where(
        Execution.project == project, Execution.domain == domain, Execution.launch_plan_name == launch_plan,
        Execution.phase.not_in([int(p) for p in WORKFLOW_TERMINAL]))) or 0


def count_active(session: Session) -> int:
    """Executions that have not finished, in every project."""
    return session.scalar(select(func.count()).select_from(Execution).where(
        Execution.phase.not_in([int(p) for p in WORKFLOW_TERMINAL]))) or 0


def find_execution(session: Session, ident: idpb.WorkflowExecutionIdentifier,
                   for_update: bool = False) -> Execution | None:
    """The execution row; `for_update` locks it until the transaction ends, for a read-modify-write of its
    closure (otherwise two writers could each read the old closure and one's change would be lost)."""
    if for_update:
        lock_for_update(session)
    return session.get(Execution, (ident.project, ident.domain, ident.name), with_for_update=for_update or None)


def get_execution(session: Session, ident: idpb.WorkflowExecutionIdentifier, for_update: bool = False) -> Execution:
    row = find_execution(session, ident, for_update)
    if row is None:
        raise NotFound(f"execution {ident.project}/{ident.domain}/{ident.name} does not exist; "
                       f"list executions to find its name")
    return row


# The lookups a client watching an execution makes for every node on every poll, built once: building the
# statement (its WHERE clause, its cache key) cost SQLAlchemy more than running it.
_NODE_EXECUTION = select(NodeExecution).where(
    NodeExecution.project == bindparam("project"),
    NodeExecution.domain == bindparam("domain"),
    NodeExecution.execution_name == bindparam("execution_name"),
    NodeExecution.node_id == bindparam("node_id"),
)
_TASK_EXECUTION = select(TaskExecution).where(
    TaskExecution.project == bindparam("project"),
    TaskExecution.domain == bindparam("domain"),
    TaskExecution.execution_name == bindparam("execution_name"),
    TaskExecution.node_id == bindparam("node_id"),
    TaskExecution.task_project == bindparam("task_project"),
    TaskExecution.task_domain == bindparam("task_domain"),
    TaskExecution.task_name == bindparam("task_name"),
    TaskExecution.task_version == bindparam("task_version"),
    TaskExecution.retry_attempt == bindparam("retry_attempt"),
)


def find_node_execution(session: Session, execution: idpb.WorkflowExecutionIdentifier,
                        node_id: str) -> NodeExecution | None:
    return session.scalar(_NODE_EXECUTION, {"project": execution.project, "domain": execution.domain,
                                            "execution_name": execution.name, "node_id": node_id})


def get_node_execution(session: Session, ident: idpb.NodeExecutionIdentifier) -> NodeExecution:
    row = find_node_execution(session, ident.execution_id, ident.node_id)
    if row is None:
        ex = ident.execution_id
        raise NotFound(f"node execution {ident.node_id!r} of execution {ex.project}/{ex.domain}/{ex.name} "
                       f"does not exist (yet); list the execution's node executions to see which have started")
    return row


def find_task_execution(session: Session, ident: idpb.TaskExecutionIdentifier) -> TaskExecution | None:
    node, task = ident.node_execution_id, ident.task_id
    return session.scalar(_TASK_EXECUTION, {
        "project": node.execution_id.project, "domain": node.execution_id.domain,
        "execution_name": node.execution_id.name, "node_id": node.node_id, "task_project": task.project,
        "task_domain": task.domain, "task_name": task.name, "task_version": task.version,
        "retry_attempt": ident.retry_attempt})


def get_task_execution(session: Session, ident: idpb.TaskExecutionIdentifier) -> TaskExecution:
    row = find_task_execution(session, ident)
    if row is None:
        node, task = ident.node_execution_id, ident.task_id
        ex = node.execution_id
        raise NotFound(f"task execution of {task.project}/{task.domain}/{task.name}@{task.version} "
                       f"attempt {ident.retry_attempt} on node {node.node_id!r} of execution "
                       f"{ex.project}/{ex.domain}/{ex.name} does not exist; list the node's task executions")
    return row


def execution_identifier(row: Execution | NodeExecution | TaskExecution) -> idpb.WorkflowExecutionIdentifier:
    if isinstance(row, Execution):
        return idpb.WorkflowExecutionIdentifier(project=row.project, domain=row.domain, name=row.name)
    return idpb.WorkflowExecutionIdentifier(project=row.project, domain=row.domain, name=row.execution_name)


def node_execution_identifier(row: NodeExecution | TaskExecution) -> idpb.NodeExecutionIdentifier:
    return idpb.NodeExecutionIdentifier(node_id=row.node_id, execution_id=execution_identifier(row))


def task_execution_identifier(row: TaskExecution) -> idpb.TaskExecutionIdentifier:
    return idpb.TaskExecutionIdentifier(
        task_id=idpb.Identifier(resource_type=idpb.TASK, project=row.task_project, domain=row.task_domain,
                                name=row.task_name, version=row.task_version),
        node_execution_id=node_execution_identifier(row),
        retry_attempt=row.retry_attempt,
    )
