"""The mutable status of a workflow execution, persisted as JSON in FlyteWorkflow.status_json.

Everything the engine needs to pick up an execution after a restart lives here (phases, attempts,
data directories, and each plugin's own state, such as the pid of a running task process).
"""

from __future__ import annotations

import dataclasses
import json
import os
import posixpath
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from flytelite.idl.error_kinds import ErrorInfo
from flytelite.propeller.phases import NODE_DONE, NodeStatusPhase, WorkflowStatusPhase


def iso(dt: datetime | None) -> str | None:
    return dt.isoformat() if dt is not None else None


def parse_iso(text: str | None) -> datetime | None:
    return datetime.fromisoformat(text) if text else None


# Each dataclass's fields and their defaults (_REQUIRED for a field without one), by class.
_FIELD_DEFAULTS: dict[type, tuple[tuple[str, Any], ...]] = {}
_REQUIRED = object()
# Set to "1" (the test suite does), every to_json also writes the whole status afresh and fails if the two differ.
CHECK_ENV = "FLYTELITE_CHECK_STATUS_JSON"
_DONE = ("done",)  # no node's values: a NodeStatus has more fields


def _field_defaults(cls: type) -> tuple[tuple[str, Any], ...]:
    defaults = _FIELD_DEFAULTS.get(cls)
    if defaults is None:
        if not dataclasses.is_dataclass(cls):
            raise TypeError(f"{cls.__name__} in a workflow status is not JSON serializable")
        defaults = _FIELD_DEFAULTS[cls] = tuple(
            (f.name, f.default if f.default is not dataclasses.MISSING
             else f.default_factory() if f.default_factory is not dataclasses.MISSING else _REQUIRED)
            for f in dataclasses.fields(cls))
    return defaults


def _fields(obj: Any) -> dict[str, Any]:
    """What a dataclass's JSON holds: the fields whose values differ from their defaults, which reading fills
    in again. Most of a done node's fields are empty: writing them made up half of a long workflow's status,
    which is written every round. A node's output folder is left out while it is the one its data folder and
    attempt imply (NodeStatus.from_dict derives it again)."""
    defaults = _field_defaults(type(obj))
    attributes = obj.__dict__
    written = {name: value for name, default in defaults
               if (value := attributes[name]) is not default and value != default}
    if type(obj) is NodeStatus:
        if obj.output_dir == obj.implied_output_dir():
            written.pop("output_dir", None)
        else:
            written["output_dir"] = obj.output_dir
    return written


# json calls _fields for each dataclass it meets, which copies nothing (dataclasses.asdict would deep-copy the
# whole status every round). What json.dumps(value, separators=(",", ":"), default=_fields) writes.
_dumps = json.JSONEncoder(separators=(",", ":"), default=_fields).encode
_dumps_key = json.encoder.encode_basestring_ascii  # what the encoder writes a str as


def _dumps_with(fields: dict[str, Any], name: str, value_json: str) -> str:
    """The JSON object of fields, with the value of the field name written as value_json, in its place."""
    names = list(fields)
    at = names.index(name)
    members = (_dumps({n: fields[n] for n in names[:at]})[1:-1], f"{_dumps_key(name)}:{value_json}",
               _dumps({n: fields[n] for n in names[at + 1:]})[1:-1])
    return "{" + ",".join(member for member in members if member) + "}"


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

    def implied_output_dir(self) -> str:
        """The output folder of the node's current attempt (the engine sets output_dir to it as the attempt starts)."""
        return posixpath.join(self.data_dir, str(self.attempts)) if self.data_dir else ""

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
        node = cls(**{k: v for k, v in data.items() if k in known})
        if "output_dir" not in data:
            node.output_dir = node.implied_output_dir()
        return node


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
        # The nodes the last to_json wrote, at every level (what keeping the status in memory costs).
        self.written_nodes = 0

    def to_json(self) -> str:
        """The status as JSON, exactly as _dumps writes it (each dataclass's fields that are not their defaults).

        A node's JSON from the last call is reused when the node cannot have changed since: a done node's once
        it was written after the node was done (nothing changes a done node; a retry of its parent replaces
        the parent's sub_nodes), and the JSON of a node holding only numbers and strings (one not yet started,
        most of a long chain) while they are the same. The status is written every round: this keeps a round
        from encoding again the many nodes of a long workflow that did not change."""
        previous, self._written = self._written, {}
        self.written_nodes = 0
        fields = _fields(self)
        text = _dumps_with(fields, "nodes", self._nodes_json(self.nodes, previous)) if self.nodes else _dumps(fields)
        full = _dumps(self) if os.environ.get(CHECK_ENV) == "1" else text
        if full != text:
            written, afresh = json.loads(text).get("nodes", {}), json.loads(full).get("nodes", {})
            stale = sorted(node_id for node_id in afresh if written.get(node_id) != afresh[node_id])
            raise AssertionError(f"a node changed after it was done: the JSON of {stale} (or of a node under them) "
                                 "was reused although it is stale")
        return text

    def _nodes_json(self, nodes: dict[str, NodeStatus], previous: dict) -> str:
        self.written_nodes += len(nodes)
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
            text = _dumps_with(_fields(node), "sub_nodes", self._nodes_json(node.sub_nodes, previous))
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
