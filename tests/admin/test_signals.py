"""SignalService over real gRPC (behind the ErrorInterceptor), reached by a plain stub and by FlyteRemote."""

from __future__ import annotations

from concurrent import futures

import grpc
import pytest
from flyteidl.admin import signal_pb2
from flyteidl.core import identifier_pb2 as idpb
from flyteidl.core import types_pb2
from flyteidl.service import admin_pb2_grpc, signal_pb2_grpc
from flytekit.configuration import Config
from flytekit.remote import FlyteRemote

from flytelite.admin.grpc_errors import ErrorInterceptor
from flytelite.admin.service import AdminService
from flytelite.admin.signals import SignalService, get_or_create_signal
from flytelite.config import Config as FlyteliteConfig
from flytelite.server.app import build_context
from flytelite.testing import database_url_for
from tests.admin.execution_harness import literal

P, D = "flytesnacks", "development"
BOOL = types_pb2.LiteralType(simple=types_pb2.BOOLEAN)
INT = types_pb2.LiteralType(simple=types_pb2.INTEGER)


class Signals:
    def __init__(self, ctx, stub, endpoint: str, notified: list):
        self.ctx, self.stub, self.endpoint, self.notified = ctx, stub, endpoint, notified

    def remote(self) -> FlyteRemote:
        return FlyteRemote(Config.for_endpoint(self.endpoint, insecure=True), default_project=P, default_domain=D)

    def create(self, execution: str, signal_id: str, literal_type=BOOL) -> signal_pb2.Signal:
        return self.stub.GetOrCreateSignal(signal_pb2.SignalGetOrCreateRequest(id=sid(execution, signal_id),
                                                                               type=literal_type))


@pytest.fixture
def signals(tmp_path):
    ctx = build_context(FlyteliteConfig(home=tmp_path / "home", database_url=database_url_for(tmp_path / "home")))
    notified: list = []
    ctx.notify_engine = notified.append
    server = grpc.server(futures.ThreadPoolExecutor(max_workers=4), interceptors=[ErrorInterceptor()])
    admin_pb2_grpc.add_AdminServiceServicer_to_server(AdminService(ctx), server)
    signal_pb2_grpc.add_SignalServiceServicer_to_server(SignalService(ctx), server)
    port = server.add_insecure_port("127.0.0.1:0")
    server.start()
    channel = grpc.insecure_channel(f"127.0.0.1:{port}")
    yield Signals(ctx, signal_pb2_grpc.SignalServiceStub(channel), f"localhost:{port}", notified)
    channel.close()
    server.stop(0)
    ctx.db.dispose()


def sid(execution: str, signal_id: str) -> idpb.SignalIdentifier:
    return idpb.SignalIdentifier(signal_id=signal_id,
                                 execution_id=idpb.WorkflowExecutionIdentifier(project=P, domain=D, name=execution))


def test_get_or_create_creates_once_and_keeps_the_first_type(signals):
    first = signals.create("exec-a", "approve-me", BOOL)
    assert first.id.signal_id == "approve-me" and first.type == BOOL and not first.HasField("value")
    again = signals.create("exec-a", "approve-me", INT)
    assert again.type == BOOL
    listed = signals.stub.ListSignals(signal_pb2.SignalListRequest(
        workflow_execution_id=sid("exec-a", "x").execution_id, limit=10))
    assert [s.id.signal_id for s in listed.signals] == ["approve-me"]


def test_set_signal_type_checks_and_wakes_the_engine(signals):
    signals.create("exec-b", "count", INT)
    with pytest.raises(grpc.RpcError) as err:
        signals.stub.SetSignal(signal_pb2.SignalSetRequest(id=sid("exec-b", "count"), value=literal("seven")))
    assert err.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert "expects a value of type" in err.value.details()
    assert signals.notified == []
    signals.stub.SetSignal(signal_pb2.SignalSetRequest(id=sid("exec-b", "count"), value=literal(7)))
    assert signals.notified == [(P, D, "exec-b")]
    (signal,) = signals.stub.ListSignals(signal_pb2.SignalListRequest(
        workflow_execution_id=sid("exec-b", "x").execution_id, limit=10)).signals
    assert signal.value.scalar.primitive.integer == 7


def test_set_unknown_signal_is_not_found(signals):
    with pytest.raises(grpc.RpcError) as err:
        signals.stub.SetSignal(signal_pb2.SignalSetRequest(id=sid("exec-c", "nobody-made-me"), value=literal(True)))
    assert err.value.code() == grpc.StatusCode.NOT_FOUND
    assert "nobody-made-me" in err.value.details() and "exec-c" in err.value.details()


def test_bad_requests_are_invalid_arguments(signals):
    cases = [
        lambda: signals.stub.GetOrCreateSignal(signal_pb2.SignalGetOrCreateRequest(id=sid("exec-d", ""), type=BOOL)),
        lambda: signals.stub.GetOrCreateSignal(signal_pb2.SignalGetOrCreateRequest(id=sid("exec-d", "s"))),
        lambda: signals.stub.SetSignal(signal_pb2.SignalSetRequest(id=sid("exec-d", "s"))),
        lambda: signals.stub.ListSignals(signal_pb2.SignalListRequest()),
    ]
    for call in cases:
        with pytest.raises(grpc.RpcError) as err:
            call()
        assert err.value.code() == grpc.StatusCode.INVALID_ARGUMENT, err.value.details()


def test_list_filters_on_the_execution_and_pages(signals):
    for name in ("s1", "s2", "s3"):
        signals.create("exec-e", name)
    signals.create("exec-other", "s9")
    ex = sid("exec-e", "x").execution_id
    page1 = signals.stub.ListSignals(signal_pb2.SignalListRequest(workflow_execution_id=ex, limit=2))
    page2 = signals.stub.ListSignals(signal_pb2.SignalListRequest(workflow_execution_id=ex, limit=2,
                                                                  token=page1.token))
    assert len(page1.signals) == 2 and page1.token and not page2.token
    assert sorted(s.id.signal_id for s in [*page1.signals, *page2.signals]) == ["s1", "s2", "s3"]
    only = signals.stub.ListSignals(signal_pb2.SignalListRequest(workflow_execution_id=ex, limit=10,
                                                                 filters="eq(signal_id,s2)"))
    assert [s.id.signal_id for s in only.signals] == ["s2"]


def test_flyteremote_lists_sets_approves_and_rejects(signals):
    get_or_create_signal(signals.ctx, signal_pb2.SignalGetOrCreateRequest(id=sid("exec-f", "how-many"), type=INT))
    signals.create("exec-f", "ok", BOOL)
    remote = signals.remote()
    assert sorted(s.id.signal_id for s in remote.list_signals("exec-f")) == ["how-many", "ok"]
    remote.set_signal("how-many", "exec-f", 42)
    remote.reject("ok", "exec-f")
    by_id = {s.id.signal_id: s for s in remote.list_signals("exec-f")}
    assert by_id["how-many"].value.scalar.primitive.integer == 42
    assert by_id["ok"].value.scalar.primitive.boolean is False
    remote.approve("ok", "exec-f")
    by_id = {s.id.signal_id: s for s in remote.list_signals("exec-f")}
    assert by_id["ok"].value.scalar.primitive.boolean is True
    with pytest.raises(Exception, match="expects a value of type"):
        remote.set_signal("how-many", "exec-f", "not a number")
