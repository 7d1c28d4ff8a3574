"""flytelite.testing's RunningServer (what the tests and the pytest plugin start servers with): a server that
does not become healthy is not left running."""

from __future__ import annotations

import os

import pytest

from flytelite.plugins.machinery import processes
from flytelite.testing import make_server

# Stands in for a server stuck before it answers /healthz, writing a line again and again.
STUCK = "import os, time\nprint('pid', os.getpid(), flush=True)\nwhile True:\n    print('stuck', flush=True)\n" \
        "    time.sleep(0.0001)\n"


def test_a_server_that_does_not_become_healthy_is_stopped_and_its_log_is_cut_to_its_end(tmp_path):
    (tmp_path / "stuck_server.py").write_text(STUCK)
    server = make_server(tmp_path / "server")
    server.module = "stuck_server"
    server.env = dict(os.environ, PYTHONPATH=str(tmp_path))
    with pytest.raises(RuntimeError, match=r"did not become healthy in 2s \(stopped\)") as raised:
        server.start(timeout=2)
    assert server.proc is None
    pid = int(server.log_path.read_text().split("\n", 1)[0].split()[1])
    assert processes.start_time(pid) is None, "the stuck server must not be left running"
    message = str(raised.value)
    assert "the start of" in message and "stuck" in message and len(message) < 21_000
    assert os.path.getsize(server.log_path) > 21_000
