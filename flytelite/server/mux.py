"""One public port for gRPC and HTTP.

gRPC clients open with the HTTP/2 connection preface; everything else is HTTP/1.
Each accepted connection is sniffed and spliced to the internal gRPC or HTTP
listener on loopback. The proxy only copies bytes; it never parses a request.

Without TLS (PortMux), threads of their own accept, sniff and splice each connection, and the bytes move
in the kernel (os.splice) where it can: a client polling the API costs the event loop the engine runs on
nothing. With TLS (TlsPortMux), the mux terminates it (ALPN h2 or http/1.1) on the event loop and sniffs
the decrypted stream the same way. `port_mux` picks one.
"""

from __future__ import annotations

import asyncio
import contextlib
import ipaddress
import logging
import os
import socket
import ssl
import threading

log = logging.getLogger(__name__)

H2_PREFACE = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"
SNIFF_TIMEOUT = 30.0
CHUNK = 256 * 1024


def _still_to_sniff(data: bytes) -> int:
    """How many more bytes tell the HTTP/2 preface from anything else, after `data` (0: they are told apart)."""
    return len(H2_PREFACE) - len(data) if H2_PREFACE.startswith(data) else 0


async def _sniff(reader: asyncio.StreamReader) -> bytes:
    """Read just enough bytes to tell the HTTP/2 preface from anything else."""
    data = b""
    while wanted := _still_to_sniff(data):
        chunk = await reader.read(wanted)
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


def beyond_loopback(host: str) -> list[str]:
    """The addresses listening on `host` takes that other machines can reach ("" and 0.0.0.0: every interface);
    none for localhost."""
    try:
        infos = socket.getaddrinfo(host or None, 0, socket.AF_UNSPEC, socket.SOCK_STREAM, 0, socket.AI_PASSIVE)
    except socket.gaierror:
        return []  # nothing to listen on: listen() says so
    addresses = {str(info[4][0]) for info in infos}
    return sorted(a for a in addresses if not ipaddress.ip_address(a.split("%")[0]).is_loopback)


def port_mux(host: str, port: int, tls: ssl.SSLContext | None = None) -> PortMux | TlsPortMux:
    """Bound first (listen), so that the internal listeners bound after it, to ports the system picks, can never
    be given the public port; it serves once they are known (serve)."""
    return TlsPortMux(host, port, tls) if tls is not None else PortMux(host, port)


def _check_targets(port: int, grpc_port: int, http_port: int) -> None:
    if port in (grpc_port, http_port):
        # Splicing to itself would open connections to itself until the process runs out of files.
        raise RuntimeError(f"an internal listener has the public port {port}")


class PortMux:
    """The public port without TLS: an accepting thread per listening socket, a thread per direction of each
    connection."""

    def __init__(self, host: str, port: int):
        self.host, self.port = host, port
        self.grpc_port = self.http_port = 0
        self._listeners: list[socket.socket] = []
        # Open connections' sockets (both ends), shut down by stop().
        self._open: set[socket.socket] = set()
        self._lock = threading.Lock()
        self._stopped = False

    async def listen(self) -> int:
        """Take the public port on every address of the host (the port asked for, or one the system picks for
        0); nothing is accepted yet."""
        failed: OSError | None = None
        for family, kind, proto, _, address in socket.getaddrinfo(self.host or None, self.port, socket.AF_UNSPEC,
                                                                  socket.SOCK_STREAM, 0, socket.AI_PASSIVE):
            sock = socket.socket(family, kind, proto)
            try:
                sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
                if family == socket.AF_INET6:
                    sock.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 1)
                sock.bind((address[0], self.port or address[1]) + tuple(address[2:]))
                sock.listen(128)
            except OSError as e:  # this address cannot be had (no IPv6, the port taken): the others may
                sock.close()
                failed = failed or e
                continue
            self._listeners.append(sock)
            self.port = sock.getsockname()[1]
        if not self._listeners:
            raise failed or OSError(f"{self.host!r} has no address to listen on")
        return self.port

    async def serve(self, grpc_port: int, http_port: int) -> None:
        """Accept connections and splice them to the internal listeners on these loopback ports."""
        assert self._listeners, "serve() follows listen()"
        _check_targets(self.port, grpc_port, http_port)
        self.grpc_port, self.http_port = grpc_port, http_port
        for sock in self._listeners:
            threading.Thread(target=self._accept, args=(sock,), name="mux-accept", daemon=True).start()

    async def stop(self) -> None:
        with self._lock:
            self._stopped = True
            socks = [*self._listeners, *self._open]
        for sock in socks:
            with contextlib.suppress(OSError):
                sock.shutdown(socket.SHUT_RDWR)  # wakes the thread blocked in accept, recv or splice
        for sock in self._listeners:
            sock.close()

    def _accept(self, listener: socket.socket) -> None:
        while True:
            try:
                conn, _ = listener.accept()
            except OSError:
                return  # stopped
            conn.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            threading.Thread(target=self._handle, args=(conn,), name="mux-conn", daemon=True).start()

    def _handle(self, conn: socket.socket) -> None:
        upstream = None
        try:
            if not self._track(conn):
                return
            conn.settimeout(SNIFF_TIMEOUT)
            head = _sniff_blocking(conn)
            conn.settimeout(None)
            if not head:
                return
            target = self.grpc_port if head.startswith(H2_PREFACE) else self.http_port
            upstream = socket.create_connection(("127.0.0.1", target))
            upstream.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            if not self._track(upstream):
                return
            upstream.sendall(head)
            back = threading.Thread(target=_copy, args=(upstream, conn), name="mux-conn", daemon=True)
            back.start()
            _copy(conn, upstream)
            back.join()
        except OSError:  # a timed-out sniff too
            pass
        finally:
            for sock in (conn, upstream):
                if sock is not None:
                    with self._lock:
                        self._open.discard(sock)
                    sock.close()

    def _track(self, sock: socket.socket) -> bool:
        """Keep the socket for stop() to shut down; False once stopped."""
        with self._lock:
            if self._stopped:
                return False
            self._open.add(sock)
            return True


def _sniff_blocking(conn: socket.socket) -> bytes:
    """_sniff, on a blocking socket."""
    data = b""
    while wanted := _still_to_sniff(data):
        chunk = conn.recv(wanted)
        if not chunk:
            break
        data += chunk
    return data


_SPLICE = getattr(os, "splice", None)


def _copy(src: socket.socket, dst: socket.socket) -> None:
    """Copy until `src` ends, then end `dst`'s writing (the other direction goes on): through a pipe in the
    kernel where os.splice exists (Linux), else through this thread."""
    try:
        if _SPLICE is not None:
            _splice(src.fileno(), dst.fileno())
        else:
            while chunk := src.recv(CHUNK):
                dst.sendall(chunk)
    except OSError:
        pass
    finally:
        with contextlib.suppress(OSError):
            dst.shutdown(socket.SHUT_WR)


def _splice(src: int, dst: int) -> None:
    assert _SPLICE is not None
    r, w = os.pipe()
    try:
        while moved := _SPLICE(src, w, CHUNK):
            while moved:
                moved -= _SPLICE(r, dst, moved)
    finally:
        os.close(r)
        os.close(w)


class TlsPortMux:
    """The public port with TLS, terminated on the event loop."""

    def __init__(self, host: str, port: int, tls: ssl.SSLContext):
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
        _check_targets(self.port, grpc_port, http_port)
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
