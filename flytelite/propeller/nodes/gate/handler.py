"""The gate node handler: sleep, approve and wait-for-input gates (FlytePropeller's nodes/gate).

- sleep: succeeds once the duration has passed since the attempt started; a timer on the work
  queue wakes the execution then (no polling).
- approve / signal: the gate creates its signal through the engine's signal client (admin's
  SignalService behind it) when it starts (id = execution id + signal id; BOOLEAN for approve, the
  gate's type for signal) and waits until a user sets it; SetSignal wakes the execution. approve passes its input through on True and fails the
  node on False ("rejected"); a signal gate outputs the value under its output variable.
A gate's timeout (node metadata) is enforced by the node executor; the gate only asks to be woken
at the deadline so the timeout fires on time.
"""

from __future__ import annotations

from datetime import datetime, timedelta

from flyteidl.admin import signal_pb2
from flyteidl.core import execution_pb2, identifier_pb2, literals_pb2, types_pb2

from flytelite.idl import error_codes as E
from flytelite.idl.error_kinds import SYSTEM, USER
from flytelite.propeller.nodes.handler import NodeExecutionContext, NodeHandler, PhaseInfo
from flytelite.propeller.status import parse_iso

BOOLEAN = types_pb2.LiteralType(simple=types_pb2.BOOLEAN)


class GateHandler(NodeHandler):
    kind = "gate"

    def handle(self, nctx: NodeExecutionContext) -> PhaseInfo:
        gate = nctx.node.gate_node
        condition = gate.WhichOneof("condition")
        started = _attempt_started(nctx)
        _wake_at_timeout(nctx, started)
        if condition == "sleep":
            return self._sleep(nctx, gate.sleep.duration.ToTimedelta(), started)
        if condition == "approve":
            return self._approve(nctx, gate.approve.signal_id)
        if condition == "signal":
            return self._signal(nctx, gate.signal)
        return PhaseInfo.failure(E.BAD_SPECIFICATION_ERROR, f"gate node {nctx.node_id} has no condition: it needs "
                                 "sleep, approve or signal", kind=SYSTEM)

    def _sleep(self, nctx: NodeExecutionContext, duration: timedelta, started: datetime) -> PhaseInfo:
        left = (started + duration - nctx.round.now).total_seconds()
        if left <= 0:
            return PhaseInfo.success()
        nctx.round.requeue_in(left)
        return PhaseInfo.running(f"sleeping until {started + duration:%H:%M:%S}")

    def _approve(self, nctx: NodeExecutionContext, signal_id: str) -> PhaseInfo:
        signal = _signal_of(nctx, signal_id, BOOLEAN)
        if signal is None:
            return PhaseInfo.running(f"waiting for approval (signal {signal_id!r})")
        value = signal.value
        if not (value.HasField("scalar") and value.scalar.primitive.WhichOneof("value") == "boolean"):
            return PhaseInfo.failure(E.RUNTIME_EXECUTION_ERROR, f"received a non-boolean approve signal value for "
                                     f"signal {signal_id!r}: {value}", kind=execution_pb2.ExecutionError.UNKNOWN)
        if not value.scalar.primitive.boolean:
            return PhaseInfo.failure(E.RECEIVED_REJECT_SIGNAL, f"received a reject signal to disapprove the node input "
                                     f"values (signal {signal_id!r} was set to False)", kind=USER)
        # Approved: the gate's outputs are its inputs (the upstream value it held back).
        inputs = nctx.blobs.read_proto_if_exists(nctx.input_uri, literals_pb2.LiteralMap) or literals_pb2.LiteralMap()
        nctx.blobs.write_proto(nctx.outputs_uri, inputs)
        return PhaseInfo.success(output_uri=nctx.outputs_uri)

    def _signal(self, nctx: NodeExecutionContext, condition) -> PhaseInfo:
        signal = _signal_of(nctx, condition.signal_id, condition.type)
        if signal is None:
            return PhaseInfo.running(f"waiting for input (signal {condition.signal_id!r})")
        outputs = literals_pb2.LiteralMap()
        outputs.literals[condition.output_variable_name].CopyFrom(signal.value)
        nctx.blobs.write_proto(nctx.outputs_uri, outputs)
        return PhaseInfo.success(output_uri=nctx.outputs_uri)


def _signal_of(nctx: NodeExecutionContext, signal_id: str, literal_type: types_pb2.LiteralType):
    """The signal once it has a value, else None (creating it on the first look, as FlytePropeller does)."""
    rnd = nctx.round
    request = signal_pb2.SignalGetOrCreateRequest(
        id=identifier_pb2.SignalIdentifier(signal_id=signal_id, execution_id=rnd.exec_id), type=literal_type)
    signal = rnd.clients.signals.get_or_create_signal(request)
    if not signal.HasField("value") or signal.value.WhichOneof("value") is None:
        return None
    return signal


def _attempt_started(nctx: NodeExecutionContext) -> datetime:
    # On the first look the node is still QUEUED; it becomes RUNNING in this very round.
    return parse_iso(nctx.status.last_attempt_started_at) or nctx.round.now


def _wake_at_timeout(nctx: NodeExecutionContext, started: datetime) -> None:
    node = nctx.node
    if not node.metadata.HasField("timeout"):
        return
    timeout = node.metadata.timeout.ToTimedelta()
    if timeout > timedelta(0):
        # A little after the deadline, so the node executor sees it expired.
        nctx.round.requeue_in((started + timeout - nctx.round.now).total_seconds() + 0.01)
