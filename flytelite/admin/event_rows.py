"""The execution, node and task execution rows one event-applying transaction reads and writes.

Applying a batch of events (one evaluation round's) goes through Core statements, not the ORM's unit of
work (which cost as much as the events' own work): `prefetch` reads the rows the batch names in one query
per execution, the events change plain records (`Record`), and `flush` writes what changed, one INSERT per
table and one UPDATE per set of changed columns. Nothing is written before `flush`: on SQLite the
database's write lock is held only while the batch writes, not while its events are worked out.
"""

from __future__ import annotations

from types import SimpleNamespace

from flyteidl.core import identifier_pb2 as idpb
from sqlalchemy import Connection, DateTime, Table, bindparam, insert, select, update
from sqlalchemy.orm import Session

from flytelite.store import executions as repo
from flytelite.store.db import as_utc
from flytelite.store.models import Execution, NodeExecution, TaskExecution

# Node ids per IN (...) clause (well under SQLite's limit on bound parameters).
_CHUNK = 500

NodeKey = tuple[str, str, str, str]
TaskKey = tuple[str, str, str, str, str, str, str, str, int]

_EXECUTIONS, _NODES, _TASKS = Execution.table(), NodeExecution.table(), TaskExecution.table()


class Record(SimpleNamespace):
    """One row's columns as attributes: what the event code reads and sets, and `EventRows.flush` writes."""


def new_record(model: type[NodeExecution] | type[TaskExecution], **values) -> Record:
    """A row not yet in the database, every column named (an INSERT of several rows names the same ones)."""
    missing = set(model.table().columns.keys()) - {"id"} - values.keys()
    assert not missing, f"a new {model.__tablename__} row must set {sorted(missing)}"
    return Record(id=None, **values)


def _of_nodes(table: Table):
    """The rows of `table` under some node ids of one execution: built once, bound per query (building a
    statement cost more than running it)."""
    return select(table).where(
        table.c.project == bindparam("project"), table.c.domain == bindparam("domain"),
        table.c.execution_name == bindparam("name"),
        table.c.node_id.in_(bindparam("node_ids", expanding=True)))


_NODE_ROWS = _of_nodes(_NODES)
_TASK_ROWS = _of_nodes(_TASKS)


def _by(table: Table, *columns: str) -> list:
    """WHERE terms: each column equal to the parameter of its name."""
    return [table.c[c] == bindparam(c) for c in columns]


_NODE_KEY = ("project", "domain", "execution_name", "node_id")
_TASK_KEY = (*_NODE_KEY, "task_project", "task_domain", "task_name", "task_version", "retry_attempt")
_EXECUTION_KEY = ("project", "domain", "name")
_NODE_ROW = select(_NODES).where(*_by(_NODES, *_NODE_KEY))
_TASK_ROW = select(_TASKS).where(*_by(_TASKS, *_TASK_KEY))
_EXECUTION_ROW = select(_EXECUTIONS).where(*_by(_EXECUTIONS, *_EXECUTION_KEY)).with_for_update()
_EXECUTION_EXISTS = select(_EXECUTIONS.c.project).where(*_by(_EXECUTIONS, *_EXECUTION_KEY))


def _updating(table: Table):
    """UPDATE by primary key (parameters pk_<column>); the SET clause is the columns the parameters name."""
    return update(table).where(*(c == bindparam(f"pk_{c.name}") for c in table.primary_key.columns))


# Columns of times, which SQLite hands back without their zone: a record holds them in UTC, as the events set
# them, so that an unchanged time compares equal and is not written again.
_TIMES = {t: [c.name for c in t.columns if isinstance(c.type, DateTime)]
          for t in (_EXECUTIONS, _NODES, _TASKS)}
_INSERT = {t: insert(t) for t in (_NODES, _TASKS)}
_INSERTED = {t: [c for c in t.columns.keys() if c != "id"] for t in (_NODES, _TASKS)}
_UPDATE = {t: _updating(t) for t in (_EXECUTIONS, _NODES, _TASKS)}
_PRIMARY_KEY = {t: [c.name for c in t.primary_key.columns] for t in (_EXECUTIONS, _NODES, _TASKS)}


def node_key(execution: idpb.WorkflowExecutionIdentifier, node_id: str) -> NodeKey:
    return (execution.project, execution.domain, execution.name, node_id)


def task_key(ident: idpb.TaskExecutionIdentifier) -> TaskKey:
    node, task = ident.node_execution_id, ident.task_id
    ex = node.execution_id
    return (ex.project, ex.domain, ex.name, node.node_id, task.project, task.domain, task.name, task.version,
            ident.retry_attempt)


class _Tracked:
    """A record and the columns it had when read or last written (None: not in the database yet)."""

    __slots__ = ("table", "record", "written")

    def __init__(self, table: Table, record: Record, written: dict | None):
        self.table, self.record, self.written = table, record, written


class EventRows:
    """Execution, node and task execution rows by Flyte identifier, for one transaction.

    A node key it was told about (prefetched) and holds no row for does not exist.
    """

    def __init__(self, session: Session):
        self.session = session
        self._conn: Connection = session.connection()
        self._nodes: dict[NodeKey, Record | None] = {}
        self._tasks: dict[TaskKey, Record | None] = {}
        self._executions: dict[tuple[str, str, str], Record] = {}
        # Executions known to exist (a node event only names its execution; it changes nothing of it).
        self._existing: set[tuple[str, str, str]] = set()
        # Nodes whose task execution rows were all loaded: a task key of theirs not in _tasks has no row.
        self._nodes_with_tasks: set[NodeKey] = set()
        self._tracked: list[_Tracked] = []

    def _read(self, table: Table, row) -> Record:
        values = row._asdict()
        for column in _TIMES[table]:
            values[column] = as_utc(values[column])
        record = Record(**values)
        self._tracked.append(_Tracked(table, record, values))
        return record

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
                for row in self._conn.execute(_NODE_ROWS, params):
                    self._nodes[(project, domain, name, row.node_id)] = self._read(_NODES, row)
                    self._existing.add((project, domain, name))  # a node execution's execution exists
                for row in self._conn.execute(_TASK_ROWS, params):
                    attempt: TaskKey = (project, domain, name, row.node_id, row.task_project, row.task_domain,
                                        row.task_name, row.task_version, row.retry_attempt)
                    self._tasks[attempt] = self._read(_TASKS, row)
                self._nodes_with_tasks.update((project, domain, name, n) for n in chunk)

    def execution(self, ident: idpb.WorkflowExecutionIdentifier) -> Record:
        """The execution row, locked until the transaction ends (raises NotFound as repo.get_execution
        does)."""
        key = (ident.project, ident.domain, ident.name)
        record = self._executions.get(key)
        if record is None:
            repo.lock_for_update(self.session)
            row = self._conn.execute(_EXECUTION_ROW, dict(zip(_EXECUTION_KEY, key, strict=True))).first()
            if row is None:
                repo.get_execution(self.session, ident)  # raises NotFound with the message users see
            record = self._executions[key] = self._read(_EXECUTIONS, row)
        return record

    def require_execution(self, ident: idpb.WorkflowExecutionIdentifier) -> None:
        """Raise NotFound (as repo.get_execution does) unless the execution exists. Without a lock: a node
        event changes nothing of its execution."""
        key = (ident.project, ident.domain, ident.name)
        if key in self._executions or key in self._existing:
            return
        if self._conn.execute(_EXECUTION_EXISTS, dict(zip(_EXECUTION_KEY, key, strict=True))).first() is None:
            repo.get_execution(self.session, ident)  # raises NotFound with the message users see
        self._existing.add(key)

    def node(self, execution: idpb.WorkflowExecutionIdentifier, node_id: str) -> Record | None:
        key = node_key(execution, node_id)
        if key in self._nodes:
            return self._nodes[key]
        row = self._conn.execute(_NODE_ROW, dict(zip(_NODE_KEY, key, strict=True))).first()
        record = self._nodes[key] = self._read(_NODES, row) if row is not None else None
        return record

    def add_node(self, execution: idpb.WorkflowExecutionIdentifier, record: Record) -> None:
        self._tracked.append(_Tracked(_NODES, record, None))
        self._nodes[node_key(execution, record.node_id)] = record

    def node_row_id(self, ident: idpb.NodeExecutionIdentifier) -> int:
        """The database id of an existing node execution (inserting it now if it is new in this batch)."""
        record = self.require_node(ident)
        if record.id is None:
            tracked = next(t for t in self._tracked if t.record is record)
            inserted = self._conn.execute(_INSERT[_NODES], _values(tracked)).inserted_primary_key
            assert inserted is not None, "an INSERT of one row learns its id"
            record.id = inserted[0]
            tracked.written = dict(vars(record))
        return record.id

    def require_node(self, ident: idpb.NodeExecutionIdentifier) -> Record:
        record = self.node(ident.execution_id, ident.node_id)
        if record is None:
            repo.get_node_execution(self.session, ident)  # raises NotFound with the message users see
        assert record is not None, "node() finds every row get_node_execution does"
        return record

    def task(self, ident: idpb.TaskExecutionIdentifier) -> Record | None:
        key = task_key(ident)
        if key in self._tasks:
            return self._tasks[key]
        if key[:4] in self._nodes_with_tasks:
            return None
        row = self._conn.execute(_TASK_ROW, dict(zip(_TASK_KEY, key, strict=True))).first()
        record = self._tasks[key] = self._read(_TASKS, row) if row is not None else None
        return record

    def add_task(self, ident: idpb.TaskExecutionIdentifier, record: Record) -> None:
        self._tracked.append(_Tracked(_TASKS, record, None))
        self._tasks[task_key(ident)] = record

    def flush(self) -> None:
        """Write every new row and every changed column of the rows read: the transaction's last step with
        these rows (a change made after it is not written; rows inserted by it do not learn their ids)."""
        new: dict[Table, list[dict]] = {}
        changed: dict[tuple[Table, tuple[str, ...]], list[dict]] = {}
        for tracked in self._tracked:
            before = tracked.written
            if before is None:
                new.setdefault(tracked.table, []).append(_values(tracked))
                continue
            now = vars(tracked.record)
            columns = tuple(c for c, value in now.items() if before[c] != value)
            if columns:
                params = {f"pk_{k}": before[k] for k in _PRIMARY_KEY[tracked.table]}
                params.update((c, now[c]) for c in columns)
                changed.setdefault((tracked.table, columns), []).append(params)
        self._tracked.clear()
        for table, values in new.items():
            self._conn.execute(_INSERT[table], values)
        for (table, _), params_list in changed.items():
            self._conn.execute(_UPDATE[table], params_list)


def _values(tracked: _Tracked) -> dict:
    """A new row's columns, for its INSERT."""
    return {c: getattr(tracked.record, c) for c in _INSERTED[tracked.table]}
