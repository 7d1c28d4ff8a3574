"""Admin's implementations of the engine's interfaces (flytelite.admin.engine_clients, wired by admin_clients)."""

from __future__ import annotations

import inspect

import pytest
from flyteidl.admin import signal_pb2
from flyteidl.core import identifier_pb2 as idpb
from flyteidl.core import types_pb2

from flytelite import errors
from flytelite.propeller.clients import AdminClients, launchplan, recovery, signals, tasks, unconnected
from tests.admin.execution_harness import D, Harness, P

# Each field of AdminClients and the Protocol its value must satisfy.
SEAMS = {"launch_plans": launchplan.Executor, "launch_plan_reader": launchplan.Reader, "task_reader": tasks.Reader,
         "recovery": recovery.Client, "signals": signals.Client}
MISSING = idpb.WorkflowExecutionIdentifier(project=P, domain=D, name="never-launched")


@pytest.fixture
def admin(tmp_path):
    harness = Harness(tmp_path)
    yield harness
    harness.close()


def _protocol_methods(protocol) -> dict[str, inspect.Signature]:
    return {name: inspect.signature(fn) for name, fn in vars(protocol).items()
            if inspect.isfunction(fn) and not name.startswith("_")}


def test_every_seam_is_filled_with_an_implementation_of_its_protocol(admin):
    assert set(SEAMS) == {f for f in AdminClients.__dataclass_fields__}
    for field, protocol in SEAMS.items():
        impl = getattr(admin.clients, field)
        for name, wanted in _protocol_methods(protocol).items():
            got = inspect.signature(getattr(type(impl), name))
            assert list(got.parameters) == list(wanted.parameters), f"{type(impl).__name__}.{name}"


def test_unknown_things_are_none_and_killing_them_is_a_no_op(admin):
    c = admin.clients
    assert c.launch_plans.get_status(MISSING) is None
    c.launch_plans.kill(MISSING, "cascading abort")
    assert c.recovery.recover_node_execution(MISSING, "n0") is None
    lp = idpb.Identifier(resource_type=idpb.LAUNCH_PLAN, project=P, domain=D, name="nope", version="v1")
    assert c.launch_plan_reader.get_launch_plan(lp) is None
    assert c.task_reader.get_task(idpb.Identifier(resource_type=idpb.TASK, project=P, domain=D, name="nope",
                                                  version="v1")) is None


def test_launch_plans_and_tasks_read_as_registered(admin):
    admin.register_all()
    lp = idpb.Identifier(resource_type=idpb.LAUNCH_PLAN, project=P, domain=D, name="pipeline_fixed", version="v1")
    found = admin.clients.launch_plan_reader.get_launch_plan(lp)
    assert found.id.name == "pipeline_fixed" and "x" in found.spec.fixed_inputs.literals
    task = idpb.Identifier(resource_type=idpb.TASK, project=P, domain=D,
                           name="tests.admin.execution_harness.double", version="v1")
    assert admin.clients.task_reader.get_task(task).closure.compiled_task.template.id.name == task.name


def test_signals_are_created_once_and_keep_their_type(admin):
    admin.register_all()
    exec_id = admin.create("tests.admin.execution_harness.pipeline", {"x": 1})
    ident = idpb.SignalIdentifier(signal_id="approve", execution_id=exec_id)
    boolean = types_pb2.LiteralType(simple=types_pb2.BOOLEAN)
    first = admin.clients.signals.get_or_create_signal(signal_pb2.SignalGetOrCreateRequest(id=ident, type=boolean))
    again = admin.clients.signals.get_or_create_signal(signal_pb2.SignalGetOrCreateRequest(
        id=ident, type=types_pb2.LiteralType(simple=types_pb2.STRING)))
    assert first.type == again.type == boolean and not again.HasField("value")


def test_an_engine_without_admin_says_what_to_wire():
    with pytest.raises(errors.FailedPrecondition, match="launch"):
        unconnected().launch_plans.launch(None, MISSING, None, None)
    with pytest.raises(errors.FailedPrecondition, match="admin_clients"):
        unconnected().signals.get_or_create_signal(signal_pb2.SignalGetOrCreateRequest())
