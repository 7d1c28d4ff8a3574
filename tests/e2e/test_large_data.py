"""Large execution data with real flytekit: a 50 MB input runs, its data comes back as links past
`remote_data.max_size_bytes` (FlyteRemote downloads them), the 50 MB output is offloaded as FlytePropeller
offloads literals, and requests or replies past the gRPC limits are refused naming the config key."""

from __future__ import annotations

import time
import urllib.request
from datetime import timedelta

import grpc
import pytest
from flyteidl.admin import execution_pb2
from flyteidl.core import identifier_pb2, literals_pb2
from flyteidl.service import admin_pb2_grpc
from flytekit.exceptions.system import FlyteSystemException
from flytekit.models.core.execution import WorkflowExecutionPhase

from flytelite.testing import make_server
from tests.e2e.flyte_cli import copy_workflows, pyflyte, remote_for

pytestmark = pytest.mark.e2e

MB = 1024 * 1024
BIG = 50 * MB
MIDDLE = 3 * MB  # tests/e2e/workflows/large_data.py
CONFIG = "grpc:\n  max_receive_message_bytes: 62914560\n"  # 60 MiB: the 50 MB input passes, 70 MB does not


@pytest.fixture
def large_server(tmp_path):
    server = make_server(tmp_path / "srv", CONFIG)
    server.start()
    yield server
    server.stop()


def _channel(server):
    return grpc.insecure_channel(f"localhost:{server.port}", options=[("grpc.max_receive_message_length", -1)])


def test_fifty_megabytes_in_and_out(large_server, tmp_path):
    server = large_server
    code = copy_workflows(tmp_path / "wf", "large_data.py")
    pyflyte(server, "register", "--project", "flytesnacks", "--domain", "development", "--version", "v1",
            "large_data.py", cwd=code)
    remote = remote_for(server)
    lp = remote.fetch_launch_plan(name="large_data.large_wf", version="v1")
    blob = "ab" * (BIG // 2)
    started = time.monotonic()
    execution = remote.execute(lp, inputs={"blob": blob})
    execution = remote.wait(execution, timeout=timedelta(seconds=180), poll_interval=timedelta(seconds=0.3))
    ran = time.monotonic() - started
    assert execution.closure.phase == WorkflowExecutionPhase.SUCCEEDED, execution.error

    # What the API answers: the 50 MB input and the outputs (3 MB inline + a reference) as links only.
    ident = identifier_pb2.WorkflowExecutionIdentifier(project="flytesnacks", domain="development",
                                                       name=execution.id.name)
    stub = admin_pb2_grpc.AdminServiceStub(_channel(server))
    data = stub.GetExecutionData(execution_pb2.WorkflowExecutionGetDataRequest(id=ident))
    assert not data.full_inputs.literals and data.inputs.bytes > BIG and data.inputs.url.startswith("http")
    assert not data.full_outputs.literals and MIDDLE < data.outputs.bytes < 4 * MB, data.outputs
    assert data.ByteSize() < 10_000

    # FlyteRemote: a fresh fetch, then sync, reads every value through the links and the offloaded blob.
    fetched = time.monotonic()
    again = remote.sync_execution(remote_for(server).fetch_execution(name=execution.id.name), sync_nodes=True)
    assert again.inputs["blob"] == blob
    assert again.outputs["o0"] == BIG
    assert again.outputs["o1"] == blob[:MIDDLE]
    assert again.outputs["o2"] == blob
    node = again.node_executions["n0"]
    assert node.inputs["blob"] == blob and node.outputs["o2"] == blob
    # The task wrote the 50 MB output beside its outputs.pb (flytekit's offloading, told by the engine).
    link = remote.client.get_node_execution_data(node.id).outputs.url
    with urllib.request.urlopen(link) as reply:
        outputs = literals_pb2.LiteralMap.FromString(reply.read())
    offloaded = outputs.literals["o2"].offloaded_metadata
    assert offloaded.uri.endswith("/o2_offloaded_metadata.pb") and offloaded.size_bytes > BIG
    print(f"\n[large data] 50 MB in and out: run {ran:.1f} s, fetch and read {time.monotonic() - fetched:.1f} s")

    # 70 MB is past grpc.max_receive_message_bytes (60 MiB): refused, naming the key.
    with pytest.raises(FlyteSystemException) as refused:
        remote.execute(lp, inputs={"blob": "x" * (70 * MB)})
    cause = refused.value.__cause__
    assert cause.code() == grpc.StatusCode.RESOURCE_EXHAUSTED
    assert "grpc.max_receive_message_bytes" in cause.details() and "62914560" in cause.details()


def test_reply_past_send_limit_names_the_key(tmp_path):
    server = make_server(tmp_path / "srv", "remote_data:\n  max_size_bytes: 0\n"
                         "grpc:\n  max_send_message_bytes: 1048576\n")
    server.start()
    try:
        code = copy_workflows(tmp_path / "wf", "large_data.py")
        pyflyte(server, "register", "--project", "flytesnacks", "--domain", "development", "--version", "v1",
                "large_data.py", cwd=code)
        remote = remote_for(server)
        lp = remote.fetch_launch_plan(name="large_data.large_wf", version="v1")
        execution = remote.execute(lp, inputs={"blob": "y" * (2 * MB)})
        ident = identifier_pb2.WorkflowExecutionIdentifier(project="flytesnacks", domain="development",
                                                           name=execution.id.name)
        stub = admin_pb2_grpc.AdminServiceStub(_channel(server))
        with pytest.raises(grpc.RpcError) as refused:
            stub.GetExecutionData(execution_pb2.WorkflowExecutionGetDataRequest(id=ident))
        assert refused.value.code() == grpc.StatusCode.RESOURCE_EXHAUSTED
        assert "grpc.max_send_message_bytes" in refused.value.details()
        assert "1048576" in refused.value.details()
    finally:
        server.stop()
