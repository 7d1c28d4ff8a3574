"""WorkflowStatus JSON: only what differs from the defaults is written, the incremental writer writes exactly what
a fresh write would, and what is written reads back equal."""

from __future__ import annotations

import dataclasses
import json

import pytest

from flytelite.idl.error_kinds import ErrorInfo
from flytelite.propeller import status as status_module
from flytelite.propeller.phases import NodeStatusPhase, WorkflowStatusPhase
from flytelite.propeller.status import CHECK_ENV, NodeStatus, TaskStatus, WorkflowStatus


def fresh_json(obj) -> str:
    """What the status JSON must be: the whole object written afresh, no node's earlier JSON reused."""
    return status_module._dumps(obj)


def status() -> WorkflowStatus:
    st = WorkflowStatus(phase=WorkflowStatusPhase.RUNNING, error=ErrorInfo("E", "boom", 1), data_dir="/d")
    for i in range(3):
        node = st.node(f"n{i}")
        node.phase, node.attempts = NodeStatusPhase.RUNNING, i
        node.task = TaskStatus(phase=2, plugin={"pid": 7, "paths": ["a", {"b": None}]}, cache={"k": 1.5})
        node.sub_nodes = {"c": NodeStatus(phase=NodeStatusPhase.FAILED, error=ErrorInfo("X", "y"))}
        node.array = {"items": "0123", "running": {"1": dataclasses.asdict(NodeStatus())}}
    return st


def test_to_json_is_a_fresh_write_and_round_trips():
    st = status()
    text = st.to_json()
    assert text == fresh_json(st)
    assert WorkflowStatus.from_json(text) == st
    assert json.loads(text)["nodes"]["n1"]["sub_nodes"] == {"c": {"phase": NodeStatusPhase.FAILED,
                                                                  "error": {"code": "X", "message": "y"}}}


def test_only_what_differs_from_the_defaults_is_written():
    assert WorkflowStatus().to_json() == "{}"
    assert WorkflowStatus.from_json("{}") == WorkflowStatus()
    st = WorkflowStatus(phase=WorkflowStatusPhase.SUCCESS, data_dir="/d")
    done = st.node("n0")  # a done node as the engine leaves it: its output folder is its attempt's
    done.phase, done.attempts, done.stopped_at = NodeStatusPhase.SUCCEEDED, 2, "t"
    done.data_dir, done.output_dir = "/d/n0/data", "/d/n0/data/2"
    moved = st.node("n1")  # an output folder the data folder does not imply is written
    moved.phase, moved.data_dir, moved.output_dir = NodeStatusPhase.RUNNING, "/d/n1/data", "/elsewhere"
    unset = st.node("n2")  # as is an empty one beside a data folder
    unset.phase, unset.data_dir = NodeStatusPhase.QUEUED, "/d/n2/data"
    st.node("n3")  # not started: nothing but its name
    text = st.to_json()
    assert json.loads(text) == {"phase": WorkflowStatusPhase.SUCCESS, "data_dir": "/d", "nodes": {
        "n0": {"phase": NodeStatusPhase.SUCCEEDED, "attempts": 2, "stopped_at": "t", "data_dir": "/d/n0/data"},
        "n1": {"phase": NodeStatusPhase.RUNNING, "data_dir": "/d/n1/data", "output_dir": "/elsewhere"},
        "n2": {"phase": NodeStatusPhase.QUEUED, "data_dir": "/d/n2/data", "output_dir": ""},
        "n3": {}}}
    assert text == fresh_json(st)
    assert WorkflowStatus.from_json(text) == st
    # A status written before defaults were left out reads the same.
    assert WorkflowStatus.from_json(json.dumps(dataclasses.asdict(st))) == st


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
    assert second == fresh_json(st) != first
    assert st._written[id(done)][2] == fresh_json(done)
    # A node that is no longer there is forgotten; a retried parent's new sub-node is written afresh.
    del st.nodes["done"]
    st.node("n1").sub_nodes = {"c": NodeStatus(phase=NodeStatusPhase.SUCCEEDED)}
    assert st.to_json() == fresh_json(st)
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
    assert st.to_json() == fresh_json(st)
    st.to_json()
    waiting.phase = NodeStatusPhase.SKIPPED  # now done: its JSON as a waiting node is not reused
    assert '"phase":7' in st.to_json() and st._written[id(waiting)][2] == fresh_json(waiting)
    waiting.phase = NodeStatusPhase.RUNNING  # (never done by the engine: a done node stays done)
    waiting.task = TaskStatus(plugin={"pid": 1})  # no longer numbers and strings only: written every time
    st.to_json()
    assert id(waiting) not in st._written
    waiting.task.plugin["pid"] = 2
    assert '"pid":2' in st.to_json()
