"""EventSink.apply_batch (one transaction per evaluation round) against the one-event-at-a-time path, and the
engine's BufferedEventRecorder falling back to single events when admin refuses one."""

from __future__ import annotations

import logging
import re

import pytest
import sqlalchemy
from flyteidl.admin import node_execution_pb2, task_execution_pb2
from flyteidl.core import identifier_pb2 as idpb
from flyteidl.event import event_pb2

from flytelite import errors
from flytelite.idl.times import Clock
from flytelite.propeller.events import EventRecorder
from tests.admin.execution_harness import NODE, TASK, WF, D, Harness, P, double, ts

PIPELINE = "tests.admin.execution_harness.pipeline"


@pytest.fixture
def h(tmp_path):
    harness = Harness(tmp_path)
    harness.register_all()
    yield harness
    harness.close()


def round_events(exec_id, attempt_phase=TASK.SUCCEEDED) -> list:
    """What one round of a pipeline with a nested node reports: workflow, node and task events, one stale."""
    task_id = idpb.Identifier(resource_type=idpb.TASK, project=P, domain=D, name=double.name, version="v1")

    def node(node_id, phase, at, parent=""):
        ev = event_pb2.NodeExecutionEvent(id=idpb.NodeExecutionIdentifier(execution_id=exec_id, node_id=node_id),
                                          phase=phase, occurred_at=ts(at), producer_id="propeller",
                                          spec_node_id=node_id.split("-")[-1], event_version=1)
        if parent:
            ev.parent_node_metadata.node_id = parent
        return ev

    def attempt(node_id, retry, phase, at):
        return event_pb2.TaskExecutionEvent(
            task_id=task_id, parent_node_execution_id=idpb.NodeExecutionIdentifier(execution_id=exec_id,
                                                                                   node_id=node_id),
            retry_attempt=retry, phase=phase, occurred_at=ts(at), producer_id="propeller", reason=f"at {at}")

    return [
        event_pb2.WorkflowExecutionEvent(execution_id=exec_id, phase=WF.RUNNING, occurred_at=ts(1),
                                         producer_id="propeller"),
        node("n0", NODE.QUEUED, 2),
        attempt("n0", 0, TASK.RUNNING, 3),
        node("n0", NODE.RUNNING, 3),
        attempt("n0", 0, TASK.FAILED, 4),
        attempt("n0", 1, TASK.RUNNING, 5),
        attempt("n0", 1, attempt_phase, 6),
        node("n0", NODE.RUNNING, 6),  # stale: already RUNNING
        node("n0-0-c", NODE.QUEUED, 6, parent="n0"),  # a nested node filed under n0
        node("n0-0-c", NODE.SUCCEEDED, 7, parent="n0"),
        node("n0", NODE.SUCCEEDED, 8),
    ]


def snapshot(h, exec_id) -> dict:
    """What admin's API answers about an execution, without the ids that name it."""
    execution = h.get(exec_id)
    nodes = {}
    parents = [""]
    for parent in parents:
        listed = h.svc.ListNodeExecutions(node_execution_pb2.NodeExecutionListRequest(
            workflow_execution_id=exec_id, unique_parent_id=parent, limit=100))
        for n in listed.node_executions:
            if not parent:
                parents.append(n.id.node_id)
            attempts = h.svc.ListTaskExecutions(task_execution_pb2.TaskExecutionListRequest(
                node_execution_id=n.id, limit=100)).task_executions
            nodes[(parent, n.id.node_id)] = (n.closure.SerializeToString(deterministic=True),
                                             n.metadata.SerializeToString(deterministic=True),
                                             [(t.id.retry_attempt, t.closure.SerializeToString(deterministic=True))
                                              for t in attempts])
    return {"phase": execution.closure.phase, "started": execution.closure.started_at.ToJsonString(),
            "nodes": nodes}


def test_a_batch_leaves_what_the_same_events_one_by_one_leave(h):
    one_by_one, batched = h.create(PIPELINE, {"x": 1}), h.create(PIPELINE, {"x": 1})
    for event in round_events(one_by_one):
        {"WorkflowExecutionEvent": h.sink.workflow_event, "NodeExecutionEvent": h.sink.node_event,
         "TaskExecutionEvent": h.sink.task_event}[event.DESCRIPTOR.name](event)
    events = round_events(batched)
    # Two rounds: the second finds the first's rows in the database (prefetched), not in the session.
    h.sink.apply_batch(events[:4])
    h.sink.apply_batch(events[4:])
    # One round: the nested node's parent row is new in the same transaction (flushed for its id).
    whole = h.create(PIPELINE, {"x": 1})
    h.sink.apply_batch(round_events(whole))
    expected, got = snapshot(h, one_by_one), snapshot(h, batched)
    assert got == expected
    assert snapshot(h, whole) == expected
    assert got["phase"] == WF.RUNNING
    assert set(got["nodes"]) == {("", "n0"), ("n0", "n0-0-c")}
    assert [a for a, _ in got["nodes"][("", "n0")][2]] == [0, 1]


def written(h, apply) -> list[tuple[str, ...]]:
    """What `apply()` writes: ("INSERT", table) and ("UPDATE", table, column...) for each statement."""
    statements: list[tuple[str, ...]] = []

    def record(_conn, _cursor, statement, *_):
        words = statement.split()
        if words[0] == "INSERT":
            statements.append(("INSERT", words[2]))
        elif words[0] == "UPDATE":
            assignments = statement.split(" SET ")[1].split(" WHERE ")[0]
            statements.append(("UPDATE", words[1], *re.findall(r"(\w+)=", assignments)))

    sqlalchemy.event.listen(h.ctx.db.engine, "before_cursor_execute", record)
    try:
        apply()
    finally:
        sqlalchemy.event.remove(h.ctx.db.engine, "before_cursor_execute", record)
    return statements


def test_a_batch_writes_only_new_rows_and_changed_columns(h):
    exec_id = h.create(PIPELINE, {"x": 1})
    events = round_events(exec_id)
    h.sink.apply_batch(events[:4])
    before = snapshot(h, exec_id)
    # Stale events only (phases already recorded): nothing is written, not even an unchanged row.
    assert written(h, lambda: h.sink.apply_batch([events[3], events[2]])) == []
    assert snapshot(h, exec_id) == before
    # One new attempt row, one changed attempt row: one INSERT, and an UPDATE of the columns that changed.
    assert written(h, lambda: h.sink.apply_batch(events[4:6])) == [
        ("INSERT", "task_executions"),
        ("UPDATE", "task_executions", "phase", "closure_pb", "updated_at", "duration")]


def test_a_refused_event_fails_the_whole_batch_and_applies_none(h):
    exec_id = h.create(PIPELINE, {"x": 1})
    before = snapshot(h, exec_id)
    events = round_events(exec_id)
    orphan = event_pb2.TaskExecutionEvent()
    orphan.CopyFrom(events[2])
    orphan.parent_node_execution_id.node_id = "never-reported"
    with pytest.raises(errors.NotFound, match="never-reported"):
        h.sink.apply_batch([*events[:3], orphan])
    assert snapshot(h, exec_id) == before
    assert before["phase"] != WF.RUNNING and before["nodes"] == {}


def test_the_recorder_sends_a_refused_batch_one_by_one(h, caplog):
    exec_id = h.create(PIPELINE, {"x": 1})
    recorder = EventRecorder(h.sink, Clock()).buffered()
    recorder.workflow(exec_id, WF.RUNNING)
    recorder.node(exec_id, "n0", NODE.QUEUED, spec_node_id="n0")
    task_id = idpb.Identifier(resource_type=idpb.TASK, project=P, domain=D, name=double.name, version="v1")
    recorder.task(exec_id, "missing", task_id, 0, TASK.RUNNING, 0)  # admin refuses: no such node
    recorder.node(exec_id, "n0", NODE.RUNNING, spec_node_id="n0")
    assert snapshot(h, exec_id)["nodes"] == {}, "nothing is sent before the flush"
    with caplog.at_level(logging.WARNING, logger="flytelite.propeller.events"):
        recorder.flush()
    assert "admin refused TaskExecutionEvent" in caplog.text
    got = snapshot(h, exec_id)
    assert got["phase"] == WF.RUNNING
    assert list(got["nodes"]) == [("", "n0")]
    n0 = h.svc.GetNodeExecution(node_execution_pb2.NodeExecutionGetRequest(
        id=idpb.NodeExecutionIdentifier(execution_id=exec_id, node_id="n0")))
    assert n0.closure.phase == NODE.RUNNING
    recorder.flush()  # nothing left to send
