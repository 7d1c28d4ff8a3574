"""The mutable status of a workflow execution, persisted as JSON in FlyteWorkflow.status_json.

Everything the engine needs to pick up an execution after a restart lives here (phases, attempts,
data directories, and each plugin's own state, such as the pid of a running task process).
"""

from __future__ import annotations

import dataclasses
import json
import os
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from flyteidl.core import execution_pb2

from flytelite.idl.enums import as_enum
from flytelite.propeller.phases import NODE_DONE, NodeStatusPhase, WorkflowStatusPhase


def iso(dt: datetime | None) -> str | None:
    return dt.isoformat() if dt is not None else None


def parse_iso(text: str | None) -> datetime | None:
    return datetime.fromisoformat(text) if text else None


_FIELD_NAMES: dict[type, tuple[str, ...]] = {}
# Set to "1" (the test suite does), every to_json also writes the whole status afresh and fails if the two differ.
CHECK_ENV = "FLYTELITE_CHECK_STATUS_JSON"
_JSON_NODES = '"nodes":'
_JSON_SUB_NODES = '"sub_nodes":'
_DONE = ("done",)  # no node's values: a NodeStatus has more fields


def _fields(obj: Any) -> dict[str, Any]:
    """A dataclass's fields as a dict (not a copy of its values: json only reads them)."""
    names = _FIELD_NAMES.get(type(obj))
    if names is None:
        if not dataclasses.is_dataclass(obj):
            raise TypeError(f"{type(obj).__name__} in a workflow status is not JSON serializable")
        names = _FIELD_NAMES[type(obj)] = tuple(f.name for f in dataclasses.fields(obj))
    attributes = obj.__dict__
    if len(attributes) == len(names):
        # Exactly its fields, in their order (a dataclass's __init__ sets them so): the dict itself will do.
        return attributes
    return {name: getattr(obj, name) for name in names}


# json calls _fields for each dataclass it meets: far cheaper than dataclasses.asdict's deep copy, which was a
# tenth of a 1,000-node round. What json.dumps(value, separators=(",", ":"), default=_fields) writes.
_dumps = json.JSONEncoder(separators=(",", ":"), default=_fields).encode
_dumps_key = json.encoder.encode_basestring_ascii  # what the encoder writes a str as


@dataclass
class ErrorInfo:
    """A flyteidl ExecutionError kept as plain data."""

    code: str
    message: str
    kind: int = execution_pb2.ExecutionError.UNKNOWN

    def to_proto(self) -> execution_pb2.ExecutionError:
        return execution_pb2.ExecutionError(code=self.code, message=self.message,
                                            kind=as_enum(execution_pb2.ExecutionError.ErrorKind, self.kind))

    @classmethod
    def from_proto(cls, err: execution_pb2.ExecutionError) -> ErrorInfo:
        return cls(code=err.code, message=err.message, kind=err.kind)

    @property
    def is_system(self) -> bool:
        return self.kind == execution_pb2.ExecutionError.SYSTEM


@dataclass
class TaskStatus:
    """Task-node sub-status: what was last reported, plus the plugin's own persisted state."""

    phase: int = 0  # flyteidl TaskExecution.Phase last reported to admin
    phase_version: int = 0
    plugin: dict[str, Any] = field(default_factory=dict)
    # The catalog's view of this attempt (flytelite.propeller.nodes.task.cache.CacheState as a dict).
    cache: dict[str, Any] = field(default_factory=dict)


@dataclass
class NodeStatus:
    phase: int = NodeStatusPhase.NOT_YET_STARTED
    # The current attempt number (0-based); bumped on every retry, user or system.
    attempts: int = 0
    system_failures: int = 0
    queued_at: str | None = None
    started_at: str | None = None
    stopped_at: str | None = None
    last_attempt_started_at: str | None = None
    message: str = ""
    error: ErrorInfo | None = None
    data_dir: str = ""
    output_dir: str = ""
    task: TaskStatus | None = None
    # Nested execution (branch, subworkflow, dynamic): the children's statuses by spec node id (Flyte's
    # SubNodeStatus), the arm a branch took (BranchNodeState.FinalizedNodeID) and the dynamic node's
    # state (DynamicNodeState.Phase: "executing" once futures.pb was compiled). Reset on every retry.
    sub_nodes: dict[str, NodeStatus] = field(default_factory=dict)
    branch_taken: str | None = None
    dynamic_phase: str | None = None
    # Subworkflow node (Flyte's WorkflowNodeState): "failing" once its subworkflow failed, while the
    # subworkflow's own failure node runs, with the error the subworkflow failed with. Reset on every retry.
    workflow_phase: str | None = None
    workflow_error: ErrorInfo | None = None
    # Array node (map task): flytelite.propeller.nodes.array.state.ArrayState.to_dict().
    array: dict[str, Any] | None = None

    @classmethod
    def from_dict(cls, data: dict) -> NodeStatus:
        data = dict(data)
        if data.get("sub_nodes"):
            data["sub_nodes"] = {k: NodeStatus.from_dict(v) for k, v in data["sub_nodes"].items()}
        for name in ("error", "workflow_error"):
            if data.get(name):
                data[name] = ErrorInfo(**data[name])
        if data.get("task") is not None:
            data["task"] = TaskStatus(**data["task"])
        known = {f.name for f in dataclasses.fields(cls)}
        return cls(**{k: v for k, v in data.items() if k in known})


@dataclass
class WorkflowStatus:
    phase: int = WorkflowStatusPhase.READY
    started_at: str | None = None
    stopped_at: str | None = None
    message: str = ""
    error: ErrorInfo | None = None
    data_dir: str = ""
    output_uri: str = ""
    # Evaluation rounds that raised (engine bugs, unreachable event sink); too many fail the execution.
    failed_attempts: int = 0
    nodes: dict[str, NodeStatus] = field(default_factory=dict)

    def node(self, node_id: str) -> NodeStatus:
        status = self.nodes.get(node_id)
        if status is None:
            status = self.nodes[node_id] = NodeStatus()
        return status

    def __post_init__(self) -> None:
        # Each node's JSON as the last to_json wrote it, by node object: (node, what it was written from, JSON).
        self._written: dict[int, tuple[NodeStatus, tuple | None, str]] = {}

    def to_json(self) -> str:
        """The status as JSON, exactly as json.dumps of dataclasses.asdict writes it.

        A node's JSON from the last call is reused when the node cannot have changed since: a done node's once
        it was written after the node was done (nothing changes a done node; a retry of its parent replaces
        the parent's sub_nodes), and the JSON of a node holding only numbers and strings (one not yet started,
        most of a long chain) while they are the same. At 100 nodes, writing every node each time was a
        sixth of a round's time."""
        previous, self._written = self._written, {}
        head = _dumps({name: value for name, value in _fields(self).items() if name != "nodes"})
        text = f"{head[:-1]},{_JSON_NODES}{self._nodes_json(self.nodes, previous)}}}"
        full = _dumps(self) if os.environ.get(CHECK_ENV) == "1" else text
        if full != text:
            written, afresh = json.loads(text)["nodes"], json.loads(full)["nodes"]
            stale = sorted(node_id for node_id in afresh if written.get(node_id) != afresh[node_id])
            raise AssertionError(f"a node changed after it was done: the JSON of {stale} (or of a node under them) "
                                 "was reused although it is stale")
        return text

    def _nodes_json(self, nodes: dict[str, NodeStatus], previous: dict) -> str:
        return "{" + ",".join(f"{_dumps_key(node_id)}:{self._node_json(node, previous)}"
                              for node_id, node in nodes.items()) + "}"

    def _node_json(self, node: NodeStatus, previous: dict) -> str:
        # What the JSON is written from: _DONE for a done node (its JSON is reused only if it was written once
        # the node was done), its values for a node of numbers and strings only, None for any other node.
        values: tuple | None = None
        if node.phase in NODE_DONE:
            values = _DONE
        elif node.task is None and not node.sub_nodes and node.array is None and node.error is None \
                and node.workflow_error is None:
            values = tuple(node.__dict__.values())
        kept = previous.get(id(node))
        if kept is not None and kept[0] is node and values is not None and kept[1] == values:
            self._written[id(node)] = kept
            return kept[2]
        if node.sub_nodes:  # their nodes reused too; written in the field's place
            fields = _fields(node)
            names = list(fields)
            at = names.index("sub_nodes")
            before = _dumps({name: fields[name] for name in names[:at]})
            after = _dumps({name: fields[name] for name in names[at + 1:]})
            text = f"{before[:-1]},{_JSON_SUB_NODES}{self._nodes_json(node.sub_nodes, previous)},{after[1:]}"
        else:
            text = _dumps(node)
        if values is not None:
            self._written[id(node)] = (node, values, text)
        return text

    @classmethod
    def from_json(cls, text: str | None) -> WorkflowStatus:
        data = json.loads(text or "{}")
        if not data:
            return cls()
        nodes = {k: NodeStatus.from_dict(v) for k, v in (data.pop("nodes", None) or {}).items()}
        if data.get("error"):
            data["error"] = ErrorInfo(**data["error"])
        known = {f.name for f in dataclasses.fields(cls)}
        return cls(nodes=nodes, **{k: v for k, v in data.items() if k in known})
