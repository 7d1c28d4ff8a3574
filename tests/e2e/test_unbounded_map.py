"""A map with unbounded concurrency on a real server: the machine's task slots (engine.max_task_processes)
bound how many task processes run at once, and a SIGTERM in the map's middle stops the server leaving no
process behind.

Processes are told apart by their working folder: a task's is its attempt's folder in the server's home, a
zygote's is the home's log folder."""

from __future__ import annotations

import os
import signal
import threading
from datetime import timedelta
from pathlib import Path

import pytest
from flytekit.models.core.execution import WorkflowExecutionPhase

from flytelite.testing import make_server, processes_in
from tests.e2e.flyte_cli import copy_workflows, remote_for, run_remote, wait_for

pytestmark = pytest.mark.e2e
ITEMS = 1000
SLOTS = 6


class Counter(threading.Thread):
    """Counts the task processes alive, as often as it can, until stopped: the most seen at once."""

    def __init__(self, work: Path):
        super().__init__(daemon=True)
        self.work, self.peak, self.samples = work, 0, 0
        self.stopped = threading.Event()

    def run(self) -> None:
        while not self.stopped.is_set():
            self.peak = max(self.peak, len(processes_in(self.work)))
            self.samples += 1


def test_an_unbounded_map_runs_no_more_task_processes_at_once_than_the_task_slots(tmp_path):
    server = make_server(tmp_path, config=f"engine:\n  max_task_processes: {SLOTS}\n")
    server.start()
    counter = Counter(server.home / "work")
    try:
        folder = copy_workflows(tmp_path / "wf", "unbounded_map.py")
        counter.start()
        name = run_remote(server, folder, "unbounded_map.py", "unbounded_map_wf", "--n", str(ITEMS))
        remote = remote_for(server)
        execution = remote.wait(remote.fetch_execution(name=name), timeout=timedelta(seconds=600),
                                poll_interval=timedelta(seconds=1))
    finally:
        counter.stopped.set()
        server.stop()
    assert execution.closure.phase == WorkflowExecutionPhase.SUCCEEDED, execution.error
    assert execution.outputs["o0"] == sum(range(ITEMS))
    assert counter.samples > 100 and counter.peak >= 2, (counter.samples, counter.peak)
    assert counter.peak <= SLOTS, f"{counter.peak} task processes at once with {SLOTS} task slots"


def test_a_sigterm_in_the_middle_of_an_unbounded_map_stops_the_server_and_leaves_no_process(tmp_path):
    server = make_server(tmp_path)
    server.start()
    folder = copy_workflows(tmp_path / "wf", "unbounded_map.py")
    name = run_remote(server, folder, "unbounded_map.py", "unbounded_map_wf", "--n", str(ITEMS))
    logs = server.home / "logs" / f"flytesnacks-development-{name}"
    wait_for(lambda: logs.is_dir() and len(os.listdir(logs)) >= ITEMS // 10, "a tenth of the items started", 300)
    assert processes_in(server.home), "the map's processes run"
    proc = server.proc
    assert proc is not None
    proc.send_signal(signal.SIGTERM)
    assert proc.wait(120) == 0, server.log_text()[-5000:]
    server.proc = None
    # Its zygote and idle workers end with it; the items running then end after their item.
    wait_for(lambda: not processes_in(server.home), "every process of the server to end", 120)
