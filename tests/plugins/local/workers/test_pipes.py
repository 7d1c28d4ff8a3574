"""The zygote's control socket with buffers small enough to fill: neither side blocks writing to the other.

A server thread writing requests while the zygote writes its news, each waiting for the other to read, is a
deadlock (seen under a 1,000-item unbounded map): the zygote must keep reading while its news waits to be
written, and no server thread may block on the zygote reading.
"""

from __future__ import annotations

import asyncio
import os
import signal
import socket
import subprocess
import threading

from flytelite.plugins.local.workers import messages
from flytelite.plugins.local.workers import pool as pool_module
from flytelite.plugins.local.workers.pool import ZygoteHandle
from tests.plugins.local.test_warm import PY
from tests.propeller import harness as h

REQUESTS = 150
# Children at once (the zygote queues the other requests, reading on): the machine's share of the test.
MAX_CHILDREN = 8
# The least the kernel keeps for a unix socket's send buffer (it rounds smaller requests up).
SMALL = 1


def _small(sock: socket.socket) -> socket.socket:
    for option in (socket.SO_SNDBUF, socket.SO_RCVBUF):
        sock.setsockopt(socket.SOL_SOCKET, option, SMALL)
    return sock


def _request(tmp_path, i: int) -> messages.Run:
    """A request whose process ends at once (pyflyte-execute refuses an unknown option)."""
    folder = tmp_path / f"r{i}"
    return messages.Run(id=i, argv=["pyflyte-execute", "--no-such-option"], env=dict(os.environ), cwd=str(tmp_path),
                        log=str(tmp_path / "logs" / f"{i}.log"), tmp=str(folder / "tmp"),
                        pid_file=str(folder / "scratch" / "pid"), bin_dir=os.path.dirname(PY))


def test_the_zygote_reads_requests_while_the_server_does_not_read_its_news(tmp_path):
    (tmp_path / "logs").mkdir()
    ours, theirs = (_small(s) for s in socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM))
    proc = subprocess.Popen([PY, pool_module.ZYGOTE_SCRIPT, str(theirs.fileno()), "0", "0", "0.1", str(MAX_CHILDREN)],
                            pass_fds=(theirs.fileno(),), stdin=subprocess.DEVNULL, start_new_session=True)
    theirs.close()
    try:
        ours.settimeout(120)
        lines = messages.Lines()
        news: list[messages.Message] = []
        while not any(isinstance(m, messages.Ready) for m in news):
            news += lines.feed(ours.recv(1 << 16))
        # Every request is written while nothing of the zygote's news is read: the zygote answers each with a
        # Started and an Exit, many times what its socket holds, and must read on all the same.
        for i in range(REQUESTS):
            ours.sendall(messages.encode(_request(tmp_path, i)))
        while sum(isinstance(m, messages.Exit) for m in news) < REQUESTS:
            news += lines.feed(ours.recv(1 << 16))
        started = {m.id for m in news if isinstance(m, messages.Started)}
        assert started == set(range(REQUESTS))
        assert {m.code for m in news if isinstance(m, messages.Exit)} == {2}  # click's usage error
    finally:
        ours.close()
        proc.wait(60)


def test_no_server_thread_blocks_on_a_zygote_that_does_not_read(tmp_path, monkeypatch):
    pair = socket.socketpair
    monkeypatch.setattr(pool_module.socket, "socketpair", lambda *a: tuple(_small(s) for s in pair(*a)))
    zygote = ZygoteHandle(PY, tmp_path / "logs" / "zygote.log", worker_idle_seconds=0.01, max_processes=MAX_CHILDREN)
    attempts = []
    sent = threading.Event()

    def send_all() -> None:
        for i in range(REQUESTS):
            request = _request(tmp_path, i)
            attempts.append(zygote.run(request.argv, request.env, request.cwd, request.log, request.tmp))
        sent.set()

    try:
        assert zygote.ready.wait(60) and zygote.usable
        os.kill(zygote.proc.pid, signal.SIGSTOP)
        try:
            threading.Thread(target=send_all, daemon=True).start()
            # Many times what the socket holds, sent while the zygote reads nothing: none of it may block.
            assert sent.wait(60), f"{len(attempts)} of {REQUESTS} requests sent to a zygote that does not read"
        finally:
            os.kill(zygote.proc.pid, signal.SIGCONT)
        asyncio.run(h.wait_for(lambda: all(a.poll() is not None for a in attempts), timeout=120))
        assert {a.returncode for a in attempts} == {2}
    finally:
        zygote.stop()
        zygote.wait(10)
