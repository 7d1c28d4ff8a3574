"""One public port for gRPC and HTTP.

gRPC clients open with the HTTP/2 connection preface; everything else is HTTP/1.
Each accepted connection is sniffed and spliced to the internal gRPC or HTTP
listener on loopback. The proxy only copies bytes; it never parses a request.
With TLS, the mux terminates it (ALPN h2 or http/1.1) and sniffs the decrypted stream the same way.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import ssl

log = logging.getLogger(__name__)

H2_PREFACE = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"
SNIFF_TIMEOUT = 30.0
CHUNK = 256 * 1024


async def _sniff(reader: asyncio.StreamReader) -> bytes:
    """Read just enough bytes to tell the HTTP/2 preface from anything else."""
    data = b""
    while len(data) < len(H2_PREFACE) and H2_PREFACE.startswith(data):
        chunk = await reader.read(len(H2_PREFACE) - len(data))
        if not chunk:
            break
        data += chunk
    return data


async def _pump(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    try:
        while chunk := await reader.read(CHUNK):
            writer.write(chunk)
            await writer.drain()
    except (ConnectionError, asyncio.IncompleteReadError, OSError):
        pass
    finally:
        with contextlib.suppress(Exception):
            if writer.can_write_eof():
                writer.write_eof()
            else:
                # A TLS stream cannot be half-closed: close it, or a client that reuses a kept-alive
                # connection the upstream already closed would wait for an answer forever.
                writer.close()


class PortMux:
    """Bound first (listen), so that the internal listeners bound after it, to ports the system picks, can never
    be given the public port; it serves once they are known (serve)."""

    def __init__(self, host: str, port: int, tls: ssl.SSLContext | None = None):
        self.host, self.port, self.tls = host, port, tls
        self.grpc_port = self.http_port = 0
        self._server: asyncio.base_events.Server | None = None
        self._conns: set[asyncio.Task] = set()

    async def listen(self) -> int:
        """Take the public port (the one asked for, or one the system picks for 0); nothing is accepted yet."""
        self._server = await asyncio.start_server(self._handle, self.host, self.port, reuse_address=True,
                                                  ssl=self.tls, start_serving=False)
        self.port = self._server.sockets[0].getsockname()[1]
        return self.port

    async def serve(self, grpc_port: int, http_port: int) -> None:
        """Accept connections and splice them to the internal listeners on these loopback ports."""
        assert self._server is not None, "serve() follows listen()"
        if self.port in (grpc_port, http_port):
            # Splicing to itself would open connections to itself until the process runs out of files.
            raise RuntimeError(f"an internal listener has the public port {self.port}")
        self.grpc_port, self.http_port = grpc_port, http_port
        await self._server.start_serving()

    async def stop(self) -> None:
        if self._server is not None:
            self._server.close()
            await self._server.wait_closed()
        for task in list(self._conns):
            task.cancel()

    async def _handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        assert task is not None, "a connection handler runs as a task"
        self._conns.add(task)
        try:
            head = await asyncio.wait_for(_sniff(reader), SNIFF_TIMEOUT)
            if not head:
                return
            target = self.grpc_port if head.startswith(H2_PREFACE) else self.http_port
            up_reader, up_writer = await asyncio.open_connection("127.0.0.1", target)
            up_writer.write(head)
            await asyncio.gather(_pump(reader, up_writer), _pump(up_reader, writer))
            up_writer.close()
        except (asyncio.TimeoutError, ConnectionError, OSError):  # ssl.SSLError is an OSError
            pass
        except asyncio.CancelledError:
            # stop() cancels the open connections. The handler ends normally: asyncio (before 3.12) logs the
            # CancelledError of a cancelled connection handler as an error with its traceback.
            pass
        finally:
            self._conns.discard(task)
            with contextlib.suppress(Exception):
                writer.close()
