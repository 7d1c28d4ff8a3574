"""The one port that serves gRPC and HTTP (server/mux.py), seen from a real server process."""

from __future__ import annotations

import asyncio
import socket

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
