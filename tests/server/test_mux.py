"""The one port that serves gRPC and HTTP (server/mux.py), seen from a real server process."""

from __future__ import annotations

import asyncio
import socket
import threading

import pytest

from flytelite.server.mux import H2_PREFACE, PortMux
from flytelite.testing import make_server

pytestmark = pytest.mark.e2e


def test_a_clean_stop_with_connections_still_open_logs_no_error(tmp_path):
    server = make_server(tmp_path)
    server.start()
    conns: list[socket.socket] = []
    try:
        # Kept-alive clients of both kinds, idle while the server stops.
        for _ in range(3):
            conns.append(socket.create_connection(("127.0.0.1", server.port)))
            conns[-1].sendall(H2_PREFACE)
        conns.append(socket.create_connection(("127.0.0.1", server.port)))
        conns[-1].sendall(b"GET /healthz HTTP/1.1\r\nHost: localhost\r\n\r\n")
        assert conns[-1].recv(64).startswith(b"HTTP/1.1 200")
        assert server.stop() == 0
        log = server.log_text()
        assert "shutting down" in log
        assert "Traceback" not in log and "ERROR" not in log, log
    finally:
        for conn in conns:
            conn.close()
        server.stop()


def test_the_mux_never_splices_connections_to_its_own_port():
    """An internal listener given the public port would have the mux open connections to itself without end."""

    async def go():
        mux = PortMux("127.0.0.1", 0)
        port = await mux.listen()
        try:
            with pytest.raises(RuntimeError, match=f"an internal listener has the public port {port}"):
                await mux.serve(grpc_port=port + 1, http_port=port)
        finally:
            await mux.stop()

    asyncio.run(go())


def test_a_client_pinging_between_calls_keeps_its_connection(tmp_path):
    """flytekit's channels send keepalive pings every 30 s, calls or not; gRPC's defaults answer pings without
    calls, or more often than every 5 minutes, with GOAWAY "too_many_pings" (flytekit prints it as an error).
    This client pings every second for several seconds between two calls."""
    import grpc
    from flyteidl.admin import version_pb2
    from flyteidl.service import admin_pb2_grpc

    server = make_server(tmp_path)
    server.start()
    states: list[grpc.ChannelConnectivity] = []
    channel = grpc.insecure_channel(server.endpoint, options=[
        ("grpc.keepalive_time_ms", 1000), ("grpc.keepalive_permit_without_calls", 1),
        ("grpc.http2.max_pings_without_data", 0)])
    try:
        stub = admin_pb2_grpc.AdminServiceStub(channel)
        stub.GetVersion(version_pb2.GetVersionRequest())
        channel.subscribe(states.append)
        # Three pings too many end the connection under gRPC's defaults; more than twice that many go by here.
        ended = threading.Event()
        channel.subscribe(lambda state: state != grpc.ChannelConnectivity.READY and ended.set())
        assert not ended.wait(8.0), f"the connection ended: {states}"
        stub.GetVersion(version_pb2.GetVersionRequest())
    finally:
        channel.close()
        server.stop()
