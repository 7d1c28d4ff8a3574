"""OpenTelemetry traces: a real OTLP receiver over HTTP or gRPC (this test's, decoding opentelemetry-proto's
ExportTraceServiceRequest) gets one trace per execution, from the CreateExecution call (a child of the
client's span, whose W3C traceparent it sent) through the engine's rounds to the task process's launch, with
the database's statements and the blob store's writes inside; the task process itself runs with that trace's
context in TRACEPARENT."""

from __future__ import annotations

import grpc
import pytest
import yaml
from flyteidl.admin import execution_pb2
from flyteidl.core import identifier_pb2
from flyteidl.service import admin_pb2_grpc
from flytekit.models.core.execution import WorkflowExecutionPhase

from flytelite.config import Config
from flytelite.testing import make_server
from tests.e2e.flyte_cli import copy_workflows, finished, pyflyte, wait_for
from tests.ops.otlp import GrpcReceiver, Receiver, descendants

pytestmark = pytest.mark.e2e
CLIENT_TRACE, CLIENT_SPAN = "4bf92f3577b34da6a3ce929d0e0e4736", "00f067aa0ba902b7"


@pytest.mark.parametrize("protocol", ["http", "grpc"])
def test_an_execution_is_one_trace_from_the_clients_create_call_to_its_task_process(tmp_path, protocol):
    receiver = Receiver() if protocol == "http" else GrpcReceiver()
    server = make_server(tmp_path, yaml.safe_dump({"tracing": {"enabled": True, "protocol": protocol,
                                                               "endpoint": receiver.url}}))
    server.start()
    try:
        code = copy_workflows(tmp_path / "wf", "traced.py")
        pyflyte(server, "register", "--project", "flytesnacks", "--domain", "development", "--version", "t1",
                "traced.py", cwd=code)
        request = execution_pb2.ExecutionCreateRequest(
            project="flytesnacks", domain="development", name="traced1",
            spec=execution_pb2.ExecutionSpec(launch_plan=identifier_pb2.Identifier(
                resource_type=identifier_pb2.LAUNCH_PLAN, project="flytesnacks", domain="development",
                name="traced.traced_wf", version="t1")))
        with grpc.insecure_channel(server.endpoint) as channel:
            admin_pb2_grpc.AdminServiceStub(channel).CreateExecution(
                request, timeout=60, metadata=[("traceparent", f"00-{CLIENT_TRACE}-{CLIENT_SPAN}-01")])
        execution = finished(server, "traced1")
        assert execution.closure.phase == WorkflowExecutionPhase.SUCCEEDED, execution.error
        task_traceparent = execution.outputs["o0"]
    finally:
        server.stop()  # sends the spans still buffered

    trace = bytes.fromhex(CLIENT_TRACE)
    (create,) = wait_for(lambda: [s for s in receiver.named("flyteidl.service.AdminService/CreateExecution")
                                  if s.trace_id == trace], "the CreateExecution span", 60)
    assert create.parent_span_id == bytes.fromhex(CLIENT_SPAN)
    rounds = [s for s in receiver.named("propeller round") if s.trace_id == trace]
    assert rounds and all(s.parent_span_id == create.span_id for s in rounds)
    (launch,) = [s for s in receiver.named("launch task process") if s.trace_id == trace]
    assert launch.parent_span_id in {s.span_id for s in rounds}
    # The task process runs in the launch's span.
    assert task_traceparent == f"00-{CLIENT_TRACE}-{launch.span_id.hex()}-01"
    # Other calls are spans of their own traces (no traceparent sent).
    assert any(s.trace_id != trace for s in receiver.named("flyteidl.service.AdminService/GetExecution"))
    # Inside the call: the execution's row inserted, its inputs written to the blob store.
    inside = {s.name for s in descendants(receiver.spans, create)}
    assert {"db INSERT", "blob write"} <= inside, sorted(inside)
    # Inside the rounds: the statements that read and persist the execution's status.
    assert any(s.name.startswith("db ") for r in rounds for s in descendants(receiver.spans, r))
    receiver.stop()


def test_tracing_settings_are_checked(tmp_path):
    path = tmp_path / "flytelite.yaml"
    path.write_text(yaml.safe_dump({"tracing": {"enabled": True, "sampler_ratio": 2}}))
    with pytest.raises(ValueError, match="tracing.sampler_ratio must be between 0 and 1, not 2"):
        Config.load(path)
    path.write_text(yaml.safe_dump({"tracing": {"endpoint": "collector:4317"}}))
    with pytest.raises(ValueError, match="tracing.endpoint must be an http:// or https:// URL"):
        Config.load(path)
    path.write_text(yaml.safe_dump({"tracing": {"protocol": "thrift"}}))
    with pytest.raises(ValueError, match="tracing.protocol must be http .* or grpc .*, not 'thrift'"):
        Config.load(path)
