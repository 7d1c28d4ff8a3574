"""WorkflowStatus JSON: the fast serializer writes exactly what dataclasses.asdict would, and reads back equal."""

from __future__ import annotations

import dataclasses
import json

import pytest

from flytelite.propeller.phases import NodeStatusPhase, WorkflowStatusPhase
from flytelite.propeller.status import CHECK_ENV, ErrorInfo, NodeStatus, TaskStatus, WorkflowStatus


def asdict_json(obj) -> str:
    """What the status JSON must be: json.dumps of dataclasses.asdict, compactly."""
    return json.dumps(dataclasses.asdict(obj), separators=(",", ":"))


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
    assert text == asdict_json(st)
    assert WorkflowStatus.from_json(text) == st


def test_a_value_json_cannot_write_is_refused():
    st = status()
    st.node("n0").task.plugin["when"] = object()
    with pytest.raises(TypeError, match="not JSON serializable"):
        st.to_json()


def test_done_nodes_are_written_once_and_a_changed_one_is_caught(monkeypatch):
    st = status()
    done = st.node("done")
    done.phase, done.output_dir = NodeStatusPhase.SUCCEEDED, "/out"
    nested = st.node("n1").sub_nodes["c"]  # FAILED: done, inside a running node
    first = st.to_json()
    assert id(done) in st._written and id(nested) in st._written
    # A running node's change is written; the done nodes' JSON is the one kept.
    st.node("n0").attempts = 9
    second = st.to_json()
    assert second == asdict_json(st) != first
    assert st._written[id(done)][2] == asdict_json(done)
    # A node that is no longer there is forgotten; a retried parent's new sub-node is written afresh.
    del st.nodes["done"]
    st.node("n1").sub_nodes = {"c": NodeStatus(phase=NodeStatusPhase.SUCCEEDED)}
    assert st.to_json() == asdict_json(st)
    assert id(done) not in st._written and id(nested) not in st._written
    # What the check (on in the test suite) is for: a done node changed afterwards.
    monkeypatch.setenv(CHECK_ENV, "1")
    st.node("n1").sub_nodes["c"].message = "changed after it was done"
    with pytest.raises(AssertionError, match=r"changed after it was done: the JSON of \['n1'\]"):
        st.to_json()
    monkeypatch.setenv(CHECK_ENV, "0")
    assert '"changed after it was done"' not in st.to_json()


def test_a_node_of_numbers_and_strings_is_written_again_when_one_changes():
    st = status()
    waiting = st.node("waiting")
    waiting.data_dir = "/w"
    st.to_json()
    kept = st._written[id(waiting)]
    assert st.to_json() and st._written[id(waiting)] is kept  # unchanged: reused
    waiting.output_dir, waiting.phase = "/w/0", NodeStatusPhase.QUEUED
    assert st.to_json() == asdict_json(st)
    st.to_json()
    waiting.phase = NodeStatusPhase.SKIPPED  # now done: its JSON as a waiting node is not reused
    assert '"phase":7' in st.to_json() and st._written[id(waiting)][2] == asdict_json(waiting)
    waiting.phase = NodeStatusPhase.RUNNING  # (never done by the engine: a done node stays done)
    waiting.task = TaskStatus(plugin={"pid": 1})  # no longer numbers and strings only: written every time
    st.to_json()
    assert id(waiting) not in st._written
    waiting.task.plugin["pid"] = 2
    assert '"pid":2' in st.to_json()
