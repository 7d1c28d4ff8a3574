"""What a server listens on: with default settings nothing other machines reach, its task processes and warm
workers included; told to serve every interface without authentication, it does, and warns."""

from __future__ import annotations

import pytest

from flytelite.server.mux import beyond_loopback
from flytelite.testing import make_server
from tests.e2e.flyte_cli import copy_workflows, finished, run_remote, wait_for
from tests.listening import descendants, exposed, listening

WARNING = "with authentication off: anyone who can reach this machine can register workflows and run code"


def test_loopback_names_listen_nowhere_else_and_every_interface_is_named():
    assert beyond_loopback("localhost") == beyond_loopback("127.0.0.1") == beyond_loopback("::1") == []
    assert beyond_loopback("0.0.0.0") == ["0.0.0.0"]
    assert "0.0.0.0" in beyond_loopback("")


@pytest.mark.e2e
def test_a_default_server_and_its_task_processes_listen_on_loopback_only(tmp_path):
    server = make_server(tmp_path / "server")
    server.start()
    try:
        folder = copy_workflows(tmp_path / "wf", "restart.py")
        markers, release = tmp_path / "markers", tmp_path / "release"
        name = run_remote(server, folder, "restart.py", "restart_wf", "--marker_dir", str(markers),
                          "--seconds", "600", "--release", str(release))
        wait_for(lambda: any(p.name.startswith("slow-") for p in markers.glob("*")), "the slow task to start")
        processes = descendants(server.proc.pid)
        sockets = listening(processes)
        release.touch()
        execution = finished(server, name)
    finally:
        server.stop()
    assert len(processes) >= 3, f"the server, its warm zygote and the task: {processes}"
    assert any(s.port == server.port for s in sockets), [str(s) for s in sockets]
    assert exposed(sockets) == []
    assert execution.outputs["o0"] == 20
    assert WARNING not in server.log_text()


def test_a_server_told_to_serve_every_interface_without_authentication_warns(tmp_path):
    server = make_server(tmp_path / "server", "host: 0.0.0.0\n")
    server.start()
    try:
        sockets = listening(descendants(server.proc.pid))
    finally:
        server.stop()
    assert f"tcp 0.0.0.0:{server.port}" in " ".join(exposed(sockets))
    assert f"listening on 0.0.0.0 (host 0.0.0.0) {WARNING}" in server.log_text()
