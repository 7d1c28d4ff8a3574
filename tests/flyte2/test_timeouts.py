"""flyte.Timeout's three bounds and flyte.Backoff, kept by the engine: a bound that passes stops the attempt, and
the action that ends on it is TIMED_OUT with the code from which the SDK raises the matching TaskTimeoutError."""

from __future__ import annotations

import yaml

from flytelite.testing import make_server
from tests.attempts import attempts_processes
from tests.e2e.flyte_cli import wait_for
from tests.flyte2.conftest import NO_SDK, PYTHON, SUCCEEDED, TIMED_OUT, drive

pytestmark = NO_SDK


def test_max_runtime_stops_each_attempt_and_the_last_ends_timed_out(server, tmp_path):
    remote = drive(server, "overruns", {"marker_dir": str(tmp_path)}, file="timeouts.py")
    assert remote["phase"] == TIMED_OUT and remote["attempts"] == 2, remote
    assert remote["error"]["code"] == "MAX_RUNTIME_EXCEEDED" and "max_runtime of 2s" in remote["error"]["message"]
    assert (tmp_path / "overruns.log").read_text().splitlines() == ["attempt 0", "attempt 1"]
    wait_for(lambda: not attempts_processes(remote["name"]), "the timed-out attempts' processes to exit", timeout=60)


def test_a_parent_catches_its_childs_timeout_as_the_sdks_error(server, tmp_path):
    remote = drive(server, "catches_overrun", {"marker_dir": str(tmp_path)}, file="timeouts.py")
    assert remote["phase"] == SUCCEEDED and remote["outputs"] == ["'caught MaxRuntimeExceededError'"], remote


def test_a_deadline_ends_the_action_whatever_retries_are_left(server, tmp_path):
    remote = drive(server, "misses_deadline", {"marker_dir": str(tmp_path)}, file="timeouts.py")
    assert remote["phase"] == TIMED_OUT and remote["attempts"] == 1, remote
    assert remote["error"]["code"] == "DEADLINE_EXCEEDED"
    assert (tmp_path / "deadline.log").read_text().splitlines() == ["attempt 0"]


def test_retries_wait_out_their_backoff(server, tmp_path):
    remote = drive(server, "backs_off", {"marker_dir": str(tmp_path)}, file="timeouts.py")
    assert remote["phase"] == SUCCEEDED and remote["outputs"] == ["2"], remote
    starts = [float(line.split()[1]) for line in (tmp_path / "backoff.log").read_text().splitlines()]
    # base 2 s, factor 2, cap 3 s: the first retry after 2 s, the second after min(4, 3) s.
    assert len(starts) == 3 and starts[1] - starts[0] >= 2 and starts[2] - starts[1] >= 3, starts


def test_max_queued_time_ends_an_action_that_cannot_get_a_slot(tmp_path):
    server = make_server(tmp_path / "server", yaml.safe_dump({"images": {"default": PYTHON},
                                                              "engine": {"max_task_processes": 1}}))
    server.start()
    try:
        marks = tmp_path / "marks"
        marks.mkdir()
        remote = drive(server, "queued_too_long", {"marker_dir": str(marks)}, file="timeouts.py")
        assert remote["phase"] == SUCCEEDED and remote["outputs"] == ["'caught MaxQueuedTimeExceededError'"], remote
        wait_for(lambda: not attempts_processes(remote["name"]), "the run's processes to exit", timeout=60)
    finally:
        server.stop()
