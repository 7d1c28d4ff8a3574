"""SignalService: FlyteAdmin's signals, the values gate nodes (approve, wait_for_input) wait for.

A gate node creates its signal when it starts (GetOrCreateSignal: id = execution id + signal id,
type from the gate); a user sets its value (SetSignal, FlyteRemote.set_signal / approve / reject),
which is type-checked against the signal's type and wakes the engine for that execution.
ListSignals shows an execution's signals. The engine calls `get_or_create_signal` in-process,
as FlytePropeller calls FlyteAdmin's SignalService.
"""

from __future__ import annotations

from flyteidl.admin import signal_pb2
from flyteidl.core import identifier_pb2 as idpb
from flyteidl.core import literals_pb2, types_pb2
from flyteidl.service import signal_pb2_grpc
from sqlalchemy import select
from sqlalchemy.exc import IntegrityError

from flytelite.admin.entity_common import validate_length
from flytelite.admin.executions import utc_time
from flytelite.admin.filters import Field, apply_filters, apply_sort, page
from flytelite.compiler import literal_matches_type, literal_type_for_literal, type_to_str
from flytelite.context import Context, ExecutionKey
from flytelite.errors import InvalidArgument, NotFound
from flytelite.store.models import Signal

SIGNAL_FIELDS = {
    "signal_id": Field(Signal.signal_id),
    "created_at": Field(Signal.created_at, utc_time),
    "updated_at": Field(Signal.updated_at, utc_time),
}


def signal_to_proto(row: Signal) -> signal_pb2.Signal:
    signal = signal_pb2.Signal(
        id=idpb.SignalIdentifier(
            signal_id=row.signal_id,
            execution_id=idpb.WorkflowExecutionIdentifier(project=row.project, domain=row.domain,
                                                          name=row.execution_name)),
        type=types_pb2.LiteralType.FromString(row.type_pb),
    )
    if row.value_pb is not None:
        signal.value.CopyFrom(literals_pb2.Literal.FromString(row.value_pb))
    return signal


def get_or_create_signal(ctx: Context, request: signal_pb2.SignalGetOrCreateRequest) -> signal_pb2.Signal:
    """The signal, created without a value if it does not exist yet (an existing one keeps its type)."""
    key = _key(request.id)
    if not request.HasField("type"):
        raise InvalidArgument(f"signal {_describe(request.id)} needs a type")
    for _ in range(2):
        with ctx.db.session() as session:
            row = session.get(Signal, key)
            if row is not None:
                return signal_to_proto(row)
        now = ctx.clock.now()
        try:
            with ctx.db.session() as session:
                row = Signal(project=key[0], domain=key[1], execution_name=key[2], signal_id=key[3],
                             type_pb=request.type.SerializeToString(), value_pb=None, created_at=now, updated_at=now)
                session.add(row)
                session.flush()
                return signal_to_proto(row)
        except IntegrityError:
            continue  # created concurrently: read it back
    raise NotFound(f"signal {_describe(request.id)} could neither be found nor created")


def set_signal(ctx: Context, request: signal_pb2.SignalSetRequest) -> None:
    """Give a signal its value; the value must have the signal's type. Wakes the engine for the execution."""
    key = _key(request.id)
    if not request.HasField("value"):
        raise InvalidArgument(f"setting signal {_describe(request.id)} needs a value")
    with ctx.db.session() as session:
        row = session.get(Signal, key)
        if row is None:
            raise NotFound(f"signal {_describe(request.id)} does not exist; a gate node creates its signal when it "
                           f"starts, so wait until the gate is running (list the execution's signals to see them)")
        expected = types_pb2.LiteralType.FromString(row.type_pb)
        if not literal_matches_type(request.value, expected):
            inferred = literal_type_for_literal(request.value)
            got = type_to_str(inferred) if inferred is not None else "a value whose type cannot be told"
            raise InvalidArgument(f"signal {_describe(request.id)} expects a value of type {type_to_str(expected)}, "
                                  f"got {got}")
        row.value_pb = request.value.SerializeToString()
        row.updated_at = ctx.clock.now()
    ctx.notify_engine(ExecutionKey(*key[:3]))


class SignalService(signal_pb2_grpc.SignalServiceServicer):
    def __init__(self, ctx: Context):
        self.ctx = ctx

    def GetOrCreateSignal(self, request: signal_pb2.SignalGetOrCreateRequest, context=None):
        return get_or_create_signal(self.ctx, request)

    def SetSignal(self, request: signal_pb2.SignalSetRequest, context=None):
        set_signal(self.ctx, request)
        return signal_pb2.SignalSetResponse()

    def ListSignals(self, request: signal_pb2.SignalListRequest, context=None):
        ex = request.workflow_execution_id
        if not (ex.project and ex.domain and ex.name):
            raise InvalidArgument("listing signals needs workflow_execution_id with project, domain and name")
        query = select(Signal).where(Signal.project == ex.project, Signal.domain == ex.domain,
                                     Signal.execution_name == ex.name)
        query = apply_filters(query, request.filters, SIGNAL_FIELDS)
        sort_by = request.sort_by if request.HasField("sort_by") else None
        query = apply_sort(query, sort_by, SIGNAL_FIELDS, default=Signal.created_at).order_by(Signal.signal_id)
        with self.ctx.db.session() as session:
            rows, token = page(session, query, request.limit, request.token)
            signals = [signal_to_proto(r) for r in rows]
        return signal_pb2.SignalList(signals=signals, token=token)


def _key(ident: idpb.SignalIdentifier) -> tuple[str, str, str, str]:
    ex = ident.execution_id
    missing = [f for f, v in (("execution_id.project", ex.project), ("execution_id.domain", ex.domain),
                              ("execution_id.name", ex.name), ("signal_id", ident.signal_id)) if not v]
    if missing:
        raise InvalidArgument(f"signal id is missing {', '.join(missing)}")
    validate_length("signal id", ident.signal_id)
    return (ex.project, ex.domain, ex.name, ident.signal_id)


def _describe(ident: idpb.SignalIdentifier) -> str:
    ex = ident.execution_id
    return f"{ident.signal_id!r} of execution {ex.project}/{ex.domain}/{ex.name}"
