"""Gate nodes on the real engine and admin (SQLite file, blob folder, EventSink, SignalService functions).

Tasks run in-process (they are one-liners); gates are what is under test: sleep wakes on a timer,
approve and wait_for_input wait for a signal that SetSignal sets, and gate timeouts fail the node.
"""

from __future__ import annotations

import asyncio
import time
from datetime import timedelta

import pytest
from flyteidl.admin import signal_pb2
from flyteidl.core import identifier_pb2 as idpb
from flyteidl.core import literals_pb2
from flytekit import approve, sleep, task, wait_for_input, workflow

from flytelite import errors
from flytelite.admin.signals import SignalService, set_signal
from tests.admin.execution_harness import NODE, WF, Harness, literal, values_of
from tests.propeller import harness as h
from tests.propeller.admin_engine import (
    PythonTasksInProcess,
    key_of,
    make_admin,
    nodes_of,
    outputs_of,
    run_with_engine,
    wait_done,
)


@task
def gate_inc(x: int) -> int:
    return x + 1


@task
def gate_add(a: int, b: int) -> int:
    return a + b


@workflow
def gate_sleep_wf(x: int) -> int:
    nap = sleep(timedelta(seconds=1))
    y = gate_inc(x=x)
    nap >> y
    return y


@workflow
def gate_approve_wf(x: int) -> int:
    y = gate_inc(x=x)
    ok = approve(y, "go-ahead", timeout=timedelta(hours=1))
    return gate_inc(x=ok)


@workflow
def gate_input_wf(x: int) -> int:
    n = wait_for_input("how-many", timeout=timedelta(hours=1), expected_type=int)
    return gate_add(a=x, b=n)


@workflow
def gate_timeout_wf(x: int) -> int:
    y = gate_inc(x=x)
    ok = approve(y, "too-late", timeout=timedelta(seconds=1))
    return gate_inc(x=ok)


FUNCTIONS = {"gate_inc": lambda i, a: {"o0": i["x"] + 1}, "gate_add": lambda i, a: {"o0": i["a"] + i["b"]}}


@pytest.fixture
def admin(tmp_path):
    harness = make_admin(tmp_path)
    yield harness
    harness.close()


def run(admin, body):
    return run_with_engine(admin, body, PythonTasksInProcess(FUNCTIONS))


def signal_id(exec_id, name: str) -> idpb.SignalIdentifier:
    return idpb.SignalIdentifier(signal_id=name, execution_id=exec_id)


def listed_signals(admin: Harness, exec_id) -> list:
    return list(SignalService(admin.ctx).ListSignals(signal_pb2.SignalListRequest(
        workflow_execution_id=exec_id, limit=10)).signals)


def test_sleep_gate_succeeds_after_its_duration_woken_by_a_timer(admin):
    admin.register(gate_sleep_wf)
    exec_id = admin.create(gate_sleep_wf.name, {"x": 1})
    started = time.monotonic()

    async def body(engine):
        await wait_done(admin, exec_id)

    engine = run(admin, body)
    elapsed = time.monotonic() - started
    assert admin.get(exec_id).closure.phase == WF.SUCCEEDED
    assert outputs_of(admin, exec_id) == {"o0": 2}
    assert elapsed >= 1.0
    # One timer woke the execution; it was not polled while it slept.
    assert engine.rounds <= 6, engine.rounds
    gate = nodes_of(admin, exec_id)["n0"]
    assert gate.closure.phase == NODE.SUCCEEDED
    assert gate.closure.duration.ToTimedelta() >= timedelta(seconds=0.9)


def test_approve_gate_waits_for_the_signal_then_passes_its_input_through(admin):
    admin.register(gate_approve_wf)
    exec_id = admin.create(gate_approve_wf.name, {"x": 1})

    async def body(engine):
        await h.wait_for(lambda: listed_signals(admin, exec_id), 30)
        await asyncio.sleep(0.3)
        assert not h.load(admin.ctx, key_of(exec_id))[0].done
        assert nodes_of(admin, exec_id)["n1"].closure.phase == NODE.RUNNING
        set_signal(admin.ctx, signal_pb2.SignalSetRequest(id=signal_id(exec_id, "go-ahead"), value=literal(True)))
        await wait_done(admin, exec_id)

    run(admin, body)
    assert admin.get(exec_id).closure.phase == WF.SUCCEEDED
    assert outputs_of(admin, exec_id) == {"o0": 3}
    (signal,) = listed_signals(admin, exec_id)
    assert signal.id.signal_id == "go-ahead" and signal.type.simple == 4  # BOOLEAN
    assert signal.value.scalar.primitive.boolean is True
    assert nodes_of(admin, exec_id)["n1"].closure.phase == NODE.SUCCEEDED


def test_rejected_approval_fails_the_node_and_the_workflow(admin):
    admin.register(gate_approve_wf)
    exec_id = admin.create(gate_approve_wf.name, {"x": 1})

    async def body(engine):
        await h.wait_for(lambda: listed_signals(admin, exec_id), 30)
        set_signal(admin.ctx, signal_pb2.SignalSetRequest(id=signal_id(exec_id, "go-ahead"), value=literal(False)))
        await wait_done(admin, exec_id)

    run(admin, body)
    execution = admin.get(exec_id)
    assert execution.closure.phase == WF.FAILED
    assert "reject" in execution.closure.error.message
    gate = nodes_of(admin, exec_id)["n1"]
    assert gate.closure.phase == NODE.FAILED and gate.closure.error.code == "ReceivedRejectSignal"
    assert "n2" not in nodes_of(admin, exec_id)


def test_wait_for_input_outputs_the_typed_value_and_refuses_other_types(admin):
    admin.register(gate_input_wf)
    exec_id = admin.create(gate_input_wf.name, {"x": 10})

    async def body(engine):
        await h.wait_for(lambda: listed_signals(admin, exec_id), 30)
        with pytest.raises(errors.InvalidArgument, match="expects a value of type"):
            set_signal(admin.ctx, signal_pb2.SignalSetRequest(id=signal_id(exec_id, "how-many"), value=literal("5")))
        set_signal(admin.ctx, signal_pb2.SignalSetRequest(id=signal_id(exec_id, "how-many"), value=literal(5)))
        await wait_done(admin, exec_id)

    run(admin, body)
    assert admin.get(exec_id).closure.phase == WF.SUCCEEDED
    assert outputs_of(admin, exec_id) == {"o0": 15}
    gate = nodes_of(admin, exec_id)["n0"]
    gate_outputs = admin.ctx.blobs.read_proto(gate.closure.output_uri, literals_pb2.LiteralMap)
    assert values_of(gate_outputs) == {"o0": 5}


def test_gate_timeout_fails_the_node_with_a_timeout_error(admin):
    admin.register(gate_timeout_wf)
    exec_id = admin.create(gate_timeout_wf.name, {"x": 1})
    started = time.monotonic()

    async def body(engine):
        await wait_done(admin, exec_id)

    run(admin, body)
    # Woken at the deadline, not at the next resync (30 s in these tests).
    assert time.monotonic() - started < 10
    execution = admin.get(exec_id)
    assert execution.closure.phase == WF.FAILED
    assert "timeout" in execution.closure.error.message
    gate = nodes_of(admin, exec_id)["n1"]
    assert gate.closure.phase == NODE.TIMED_OUT
