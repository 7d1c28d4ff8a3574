"""The node and task execution rows one event-applying transaction has looked up or added.

Applying a batch of events (one evaluation round's) in one transaction would otherwise cost a query
per event, each flushing every pending row first: `prefetch` reads the rows the batch names in one
query per execution, and rows added while applying are found again without the database.
"""

from __future__ import annotations

from flyteidl.core import identifier_pb2 as idpb
from sqlalchemy import bindparam, select
from sqlalchemy.orm import Session

from flytelite.store import executions as repo
from flytelite.store.models import Execution, NodeExecution, TaskExecution

# Node ids per IN (...) clause (well under SQLite's limit on bound parameters).
_CHUNK = 500

NodeKey = tuple[str, str, str, str]
TaskKey = tuple[str, str, str, str, str, str, str, str, int]


def _of_nodes(model: type[NodeExecution] | type[TaskExecution]):
    """The rows of `model` under some node ids of one execution: built once, bound per query (building a
    statement cost more than running it)."""
    return select(model).where(
        model.project == bindparam("project"), model.domain == bindparam("domain"),
        model.execution_name == bindparam("name"), model.node_id.in_(bindparam("node_ids", expanding=True)))


_NODE_ROWS = _of_nodes(NodeExecution)
_TASK_ROWS = _of_nodes(TaskExecution)
_EXECUTION_EXISTS = select(Execution.project).where(
    Execution.project == bindparam("project"), Execution.domain == bindparam("domain"),
    Execution.name == bindparam("name"))


def node_key(execution: idpb.WorkflowExecutionIdentifier, node_id: str) -> NodeKey:
    return (execution.project, execution.domain, execution.name, node_id)


def task_key(ident: idpb.TaskExecutionIdentifier) -> TaskKey:
    node, task = ident.node_execution_id, ident.task_id
    ex = node.execution_id
    return (ex.project, ex.domain, ex.name, node.node_id, task.project, task.domain, task.name, task.version,
            ident.retry_attempt)


class EventRows:
    """Execution, node and task execution rows by Flyte identifier, for one session.

    A node key it was told about (prefetched) and holds no row for does not exist.
    """

    def __init__(self, session: Session):
        self.session = session
        self._nodes: dict[NodeKey, NodeExecution | None] = {}
        self._tasks: dict[TaskKey, TaskExecution | None] = {}
        # Held here because the session's identity map holds unchanged rows weakly (and would query again).
        self._executions: dict[tuple[str, str, str], Execution] = {}
        # Executions known to exist (a node event only names its execution; it changes nothing of it).
        self._existing: set[tuple[str, str, str]] = set()
        # Nodes whose task execution rows were all loaded: a task key of theirs not in _tasks has no row.
        self._nodes_with_tasks: set[NodeKey] = set()

    def prefetch(self, nodes: set[NodeKey]) -> None:
        """Load the node execution rows and every task execution row of these nodes, in a few queries."""
        by_execution: dict[tuple[str, str, str], list[str]] = {}
        for key in nodes:
            if key not in self._nodes:
                by_execution.setdefault(key[:3], []).append(key[3])
        for (project, domain, name), node_ids in by_execution.items():
            for i in range(0, len(node_ids), _CHUNK):
                chunk = node_ids[i:i + _CHUNK]
                for node_id in chunk:
                    self._nodes[(project, domain, name, node_id)] = None
                params = {"project": project, "domain": domain, "name": name, "node_ids": chunk}
                for row in self.session.scalars(_NODE_ROWS, params):
                    self._nodes[(project, domain, name, row.node_id)] = row
                for task_row in self.session.scalars(_TASK_ROWS, params):
                    self._tasks[(project, domain, name, task_row.node_id, task_row.task_project,
                                 task_row.task_domain, task_row.task_name, task_row.task_version,
                                 task_row.retry_attempt)] = task_row
                self._nodes_with_tasks.update((project, domain, name, n) for n in chunk)

    def execution(self, ident: idpb.WorkflowExecutionIdentifier) -> Execution:
        """The execution row (raises NotFound as repo.get_execution does)."""
        key = (ident.project, ident.domain, ident.name)
        row = self._executions.get(key)
        if row is None:
            row = self._executions[key] = repo.get_execution(self.session, ident, for_update=True)
        return row

    def require_execution(self, ident: idpb.WorkflowExecutionIdentifier) -> None:
        """Raise NotFound (as repo.get_execution does) unless the execution exists. Without a lock: on SQLite
        the database's write lock is then taken only by the batch's first write, so the events' processing
        before it does not hold up every other writer."""
        key = (ident.project, ident.domain, ident.name)
        if key in self._executions or key in self._existing:
            return
        params = {"project": key[0], "domain": key[1], "name": key[2]}
        if self.session.execute(_EXECUTION_EXISTS, params).first() is None:
            repo.get_execution(self.session, ident)  # raises NotFound with the message users see
        self._existing.add(key)

    def node(self, execution: idpb.WorkflowExecutionIdentifier, node_id: str) -> NodeExecution | None:
        key = node_key(execution, node_id)
        if key in self._nodes:
            return self._nodes[key]
        row = self._nodes[key] = repo.find_node_execution(self.session, execution, node_id)
        return row

    def add_node(self, execution: idpb.WorkflowExecutionIdentifier, row: NodeExecution) -> None:
        self.session.add(row)
        self._nodes[node_key(execution, row.node_id)] = row

    def node_row_id(self, ident: idpb.NodeExecutionIdentifier) -> int:
        """The database id of an existing node execution (flushing it first if it is new in this session)."""
        row = self.node(ident.execution_id, ident.node_id)
        if row is None:
            repo.get_node_execution(self.session, ident)  # raises NotFound with the message users see
        assert row is not None, "node() finds every row get_node_execution does"
        if row.id is None:
            self.session.flush()
        return row.id

    def require_node(self, ident: idpb.NodeExecutionIdentifier) -> NodeExecution:
        row = self.node(ident.execution_id, ident.node_id)
        return row if row is not None else repo.get_node_execution(self.session, ident)

    def task(self, ident: idpb.TaskExecutionIdentifier) -> TaskExecution | None:
        key = task_key(ident)
        if key in self._tasks:
            return self._tasks[key]
        if key[:4] in self._nodes_with_tasks:
            return None
        row = self._tasks[key] = repo.find_task_execution(self.session, ident)
        return row

    def add_task(self, ident: idpb.TaskExecutionIdentifier, row: TaskExecution) -> None:
        self.session.add(row)
        self._tasks[task_key(ident)] = row
