"""A Flyte 2 run across a killed server, and aborted: nothing runs twice, nothing is left running."""

from __future__ import annotations

import signal

import pytest
from flyteidl2.common import identifier_pb2
from flyteidl2.workflow import run_service_connect, run_service_pb2

from flytelite.testing import make_server
from tests.attempts import attempts_processes
from tests.e2e.flyte_cli import wait_for
from tests.flyte2.conftest import ABORTED, NO_SDK, SUCCEEDED, drive, flyte2_config, run_phase

pytestmark = NO_SDK


@pytest.fixture
def own_server(tmp_path):
    server = make_server(tmp_path / "server", flyte2_config())
    server.start()
    yield server
    if server.proc is not None:
        server.stop()


def test_a_run_goes_on_across_a_sigkill_of_the_server_and_no_child_runs_twice(own_server, tmp_path):
    marks = tmp_path / "marks"
    marks.mkdir()
    name = drive(own_server, "sleepy_fanout", {"n": 4, "seconds": 4.0, "marker_dir": str(marks)}, mode="start")["name"]
    wait_for(lambda: len(list(marks.iterdir())) >= 2, "two children to start", timeout=120)
    own_server.stop(signal.SIGKILL)
    own_server.start()
    wait_for(lambda: run_phase(own_server, name) == SUCCEEDED, "the run to succeed after the restart", timeout=180)
    starts = {p.name: p.read_text().splitlines() for p in marks.iterdir()}
    assert sorted(starts) == [f"child-{i}.log" for i in range(4)]
    assert all(len(lines) == 1 for lines in starts.values()), starts


def test_aborting_a_run_stops_its_whole_tree(own_server, tmp_path):
    marks = tmp_path / "marks"
    marks.mkdir()
    name = drive(own_server, "sleepy_fanout", {"n": 3, "seconds": 600.0, "marker_dir": str(marks)}, mode="start")["name"]
    wait_for(lambda: len(list(marks.iterdir())) == 3, "the children to start", timeout=120)
    assert len(attempts_processes(name)) >= 4  # the parent and its three children
    runs = run_service_connect.RunServiceClientSync(own_server.url)
    runs.abort_run(run_service_pb2.AbortRunRequest(
        run_id=identifier_pb2.RunIdentifier(project="flytesnacks", domain="development", name=name), reason="test"))
    wait_for(lambda: run_phase(own_server, name) == ABORTED, "the run to be aborted", timeout=60)
    wait_for(lambda: not attempts_processes(name), "every process of the run to exit", timeout=60)


def test_the_server_stops_on_sigterm_while_tasks_watch_their_children(own_server, tmp_path):
    """A parent's process keeps a WatchForUpdates stream open as long as it runs: the server's stop ends it."""
    marks = tmp_path / "marks"
    marks.mkdir()
    name = drive(own_server, "sleepy_fanout", {"n": 2, "seconds": 600.0, "marker_dir": str(marks)}, mode="start")["name"]
    wait_for(lambda: len(list(marks.iterdir())) == 2, "the children to start", timeout=120)
    assert own_server.stop(signal.SIGTERM, timeout=60) == 0
    own_server.start()
    runs = run_service_connect.RunServiceClientSync(own_server.url)
    runs.abort_run(run_service_pb2.AbortRunRequest(
        run_id=identifier_pb2.RunIdentifier(project="flytesnacks", domain="development", name=name)))
    wait_for(lambda: not attempts_processes(name), "every process of the run to exit", timeout=60)
