"""The core-sleep plugin on its own: the wait, its resumption from the persisted state, and bad specifications."""

from __future__ import annotations

import json
from datetime import datetime, timedelta, timezone
from types import SimpleNamespace

import pytest
from flyteidl.core import interface_pb2, literals_pb2, tasks_pb2, types_pb2

from flytelite.idl import error_codes as E
from flytelite.plugins.machinery.core import PluginPhase, TaskExecutionContext
from flytelite.plugins.sleep import SleepPlugin
from flytelite.storage import BlobStore

DURATION = types_pb2.LiteralType(simple=types_pb2.DURATION)
INTEGER = types_pb2.LiteralType(simple=types_pb2.INTEGER)


class Clock:
    def __init__(self):
        self.at = datetime(2026, 12, 7, tzinfo=timezone.utc)

    def now(self) -> datetime:
        return self.at


def task(inputs: dict, outputs: dict | None = None) -> tasks_pb2.TaskTemplate:
    def variables(types: dict) -> interface_pb2.VariableMap:
        return interface_pb2.VariableMap(variables={k: interface_pb2.Variable(type=t) for k, t in types.items()})

    template = tasks_pb2.TaskTemplate(type="core-sleep", interface=interface_pb2.TypedInterface(
        inputs=variables(inputs), outputs=variables(outputs or {})))
    template.id.name = "nap"
    return template


def duration(seconds: float) -> literals_pb2.Literal:
    literal = literals_pb2.Literal()
    literal.scalar.primitive.duration.FromTimedelta(timedelta(seconds=seconds))
    return literal


@pytest.fixture
def setup(tmp_path):
    blobs, clock = BlobStore(str(tmp_path / "blobs")), Clock()
    inputs_uri = f"{blobs.root}/n0/inputs.pb"

    def tctx(template: tasks_pb2.TaskTemplate, state: dict, **values: literals_pb2.Literal) -> TaskExecutionContext:
        blobs.write_proto(inputs_uri, literals_pb2.LiteralMap(literals=values))
        return TaskExecutionContext(ctx=SimpleNamespace(clock=clock, blobs=blobs), key=("p", "d", "x"), spec=None,
                                    workflow_id=None, node_id="n0", attempt=0, task=template, input_uri=inputs_uri,
                                    output_prefix=f"{blobs.root}/n0/0", state=state, wake=lambda _delay: None)

    return tctx, clock, blobs, inputs_uri


def test_an_attempt_waits_its_duration_out_and_resumes_from_its_state(setup):
    tctx, clock, blobs, inputs_uri = setup
    state: dict = {}
    first = SleepPlugin().handle(tctx(task({"duration": DURATION}), state, duration=duration(5)))
    assert first.phase == PluginPhase.RUNNING and first.poll_after == 5
    clock.at += timedelta(seconds=2)
    # A server restarted meanwhile: another plugin, the state as persisted, and the inputs no longer read.
    persisted = json.loads(json.dumps(state))
    blobs.write_proto(inputs_uri, literals_pb2.LiteralMap())
    again = SleepPlugin().handle(tctx(task({"duration": DURATION}), persisted))
    assert again.phase == PluginPhase.RUNNING and again.poll_after == pytest.approx(3)
    clock.at += timedelta(seconds=3)
    assert SleepPlugin().handle(tctx(task({"duration": DURATION}), persisted)).phase == PluginPhase.SUCCESS


def test_a_zero_duration_succeeds_at_once(setup):
    tctx, *_ = setup
    assert SleepPlugin().handle(tctx(task({"d": DURATION}), {}, d=duration(0))).phase == PluginPhase.SUCCESS


@pytest.mark.parametrize("inputs, outputs, values, message", [
    ({}, {}, {}, "needs exactly one input, of type duration; task nap has 0"),
    ({"a": DURATION, "b": DURATION}, {}, {}, "task nap has 2"),
    ({"d": DURATION}, {"o0": INTEGER}, {"d": duration(1)}, "has no outputs; task nap declares o0"),
    ({"n": INTEGER}, {}, {}, "input 'n' of task nap must be typed as duration"),
    ({"d": DURATION}, {}, {}, "input 'd' of task nap has no duration value"),
    ({"d": DURATION}, {}, {"d": duration(-1)}, "input 'd' of task nap is negative"),
])
def test_a_bad_specification_fails_saying_why(setup, inputs, outputs, values, message):
    tctx, *_ = setup
    info = SleepPlugin().handle(tctx(task(inputs, outputs), {}, **values))
    assert info.phase == PluginPhase.PERMANENT_FAILURE
    assert info.error.code == E.BAD_TASK_SPECIFICATION and message in info.error.message, info.error.message
