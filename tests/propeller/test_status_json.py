"""WorkflowStatus JSON: the fast serializer writes exactly what dataclasses.asdict would, and reads back equal."""

from __future__ import annotations

import dataclasses
import json

import pytest

from flytelite.propeller.phases import NodeStatusPhase, WorkflowStatusPhase
from flytelite.propeller.status import ErrorInfo, NodeStatus, TaskStatus, WorkflowStatus


def status() -> WorkflowStatus:
    st = WorkflowStatus(phase=WorkflowStatusPhase.RUNNING, error=ErrorInfo("E", "boom", 1), data_dir="/d")
    for i in range(3):
        node = st.node(f"n{i}")
        node.phase, node.attempts = NodeStatusPhase.RUNNING, i
        node.task = TaskStatus(phase=2, plugin={"pid": 7, "paths": ["a", {"b": None}]}, cache={"k": 1.5})
        node.sub_nodes = {"c": NodeStatus(phase=NodeStatusPhase.FAILED, error=ErrorInfo("X", "y"))}
        node.array = {"items": "0123", "running": {"1": dataclasses.asdict(NodeStatus())}}
    return st


def test_to_json_is_asdict_and_round_trips():
    st = status()
    text = st.to_json()
    assert text == json.dumps(dataclasses.asdict(st), separators=(",", ":"))
    assert WorkflowStatus.from_json(text) == st


def test_a_value_json_cannot_write_is_refused():
    st = status()
    st.node("n0").task.plugin["when"] = object()
    with pytest.raises(TypeError, match="not JSON serializable"):
        st.to_json()
