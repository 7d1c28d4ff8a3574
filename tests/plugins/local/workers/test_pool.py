"""Warm workers for map items (a worker runs sibling items one after another) and the warm pool's size.

The map-item parity test runs one real flytekit map task through the real engine warm and cold and
compares what admin would see, plus what each item could observe of its process.
"""

from __future__ import annotations

import asyncio
import collections
import os
import signal
import tempfile
import threading

import pytest
from flyteidl.core import literals_pb2

from flytelite.config import Config, EngineConfig
from flytelite.plugins.local.flytekit import FlytekitProcess
from flytelite.plugins.local.workers import messages
from flytelite.plugins.local.workers import pool as pool_module
from flytelite.plugins.local.workers.pool import WarmPool, find_by_recorded_pid
from flytelite.plugins.machinery import processes
from flytelite.plugins.machinery.slots import TaskSlots
from flytelite.propeller.engine import Engine
from flytelite.propeller.phases import WorkflowStatusPhase
from tests.plugins.local.test_plugin import _gone, markers, run_workflow
from tests.plugins.local.test_warm import PY, _run
from tests.plugins.local.workers.test_environment import _output
from tests.propeller import harness as h
from tests.propeller import warm_tasks as wt
from tests.propeller.test_restart import _second_life

ITEM_FACTS = ("x", "index", "seen", "env_left_before", "cwd_was_clean", "root_handlers", "warning_filters",
              "cwd_is_work_dir", "session_leader")


def _item(lit: literals_pb2.Literal) -> dict[str, str] | None:
    """A map item's output: an optional dict of strings (None for a failed item)."""
    value = lit.scalar.union.value if lit.scalar.HasField("union") else lit
    if value.scalar.HasField("none_type"):
        return None
    return {k: v.scalar.primitive.string_value for k, v in value.map.literals.items()}


def test_map_items_are_the_same_warm_and_cold_and_each_item_sees_a_fresh_process(tmp_path):
    xs = list(range(8))
    runs = {}
    for warm in (True, False):
        summary, forks, ctx = _run(tmp_path, warm, wt.map_probe_wf, {"xs": xs}, "mapprobe")
        outputs = [_item(lit) for lit in summary.pop("outputs")["o0"]]
        # The array node's task events report item progress: how many RUNNING updates depends on timing.
        summary["tasks"] = {n: phases[-1] for n, phases in summary["tasks"].items()}
        runs[warm] = summary, outputs, forks, ctx
    (warm, warm_items, forks, ctx), (cold, cold_items, _, _) = runs[True], runs[False]
    assert warm == cold
    assert warm["phase"] == WorkflowStatusPhase.SUCCESS and forks == len(xs)
    assert warm_items[3] is None and cold_items[3] is None  # the failed item, allowed by min_success_ratio
    for x, (w, c) in enumerate(zip(warm_items, cold_items, strict=True)):
        if x == 3:
            continue
        assert {k: w[k] for k in ITEM_FACTS} == {k: c[k] for k in ITEM_FACTS}
        # What an item did to its module, environment and folder is not seen by the next one in its worker.
        assert (w["x"], w["index"], w["seen"], w["env_left_before"], w["cwd_was_clean"]) == (
            str(x), str(x), str(x), "", "True")
        assert w["tempdir"].startswith(f"{tempfile.gettempdir()}/flytelite-")
    warm_pids = {w["pid"] for w in warm_items if w}
    assert len({c["pid"] for c in cold_items if c}) == len(xs) - 1
    assert len(warm_pids) < len(xs) - 1, "items must have been run by workers that ran a sibling before"
    assert len({w["tempdir"] for w in warm_items if w}) == len(xs) - 1
    assert len({w["random"] for w in warm_items if w}) == len(xs) - 1
    # Each item's log is its own, though its process ran others.
    logs = tmp_path / "warm" / "home" / "logs" / "flytesnacks-development-mapprobe"
    for x in xs:
        text = (logs / f"n0-n{x}-0.log").read_text()
        assert f"item {x} on stdout" in text and f"item {x} on stderr" in text
        assert not any(f"item {other} on" in text for other in xs if other != x), text


def test_tasks_of_one_code_version_run_one_after_another_in_a_worker_each_with_a_fresh_import(tmp_path):
    results = {}
    for warm in (True, False):
        summary, forks, _ = _run(tmp_path, warm, wt.different_tasks_wf, {}, "different")
        assert summary["phase"] == WorkflowStatusPhase.SUCCESS, summary
        results[warm] = [{k: v.scalar.primitive.string_value for k, v in lit.map.literals.items()}
                         for lit in (summary["outputs"]["o0"], summary["outputs"]["o1"])]
    (w1, w2), (c1, c2) = results[True], results[False]
    # What each task saw of its module and environment is the same as in fresh processes ...
    assert [(f["seen"], f["env_left_before"]) for f in (w1, w2)] == [(f["seen"], f["env_left_before"])
                                                                      for f in (c1, c2)] == [("101", ""), ("105", "")]
    # ... though one worker ran all three attempts (relay between the two probes), with their own temp dirs.
    assert w1["pid"] == w2["pid"] and c1["pid"] != c2["pid"]
    assert w1["random"] != w2["random"] and w1["tempdir"] != w2["tempdir"]


def test_the_items_of_two_map_tasks_of_one_code_version_run_in_one_worker_each_with_a_fresh_import(tmp_path):
    xs = [1, 2, 3]
    results = {}
    for warm in (True, False):
        summary, _, _ = _run(tmp_path, warm, wt.two_maps_wf, {"xs": xs}, "twomaps")
        assert summary["phase"] == WorkflowStatusPhase.SUCCESS, summary
        probes = [{k: v.scalar.primitive.string_value for k, v in lit.map.literals.items()}
                  for lit in summary["outputs"]["o0"]]
        pids = list(summary["outputs"]["o1"])
        results[warm] = probes, pids
    (w_probes, w_pids), (c_probes, c_pids) = results[True], results[False]
    # Each item saw a fresh import and environment, as in a process of its own ...
    assert [(p["seen"], p["env_left_before"]) for p in w_probes] == [(p["seen"], p["env_left_before"])
                                                                    for p in c_probes] == [("101", ""), ("102", ""),
                                                                                           ("103", "")]
    # ... though the worker that ran the first map's items ran the second's too (its own inputs, another task).
    assert len({p["pid"] for p in w_probes} | set(w_pids)) == 1
    assert len({p["pid"] for p in c_probes} | set(c_pids)) == 2 * len(xs)


def test_an_item_that_leaves_a_thread_or_an_atexit_hook_ends_as_a_process_would(tmp_path):
    marks = tmp_path / "marks"
    marks.mkdir()
    summary, forks, ctx = _run(tmp_path, True, wt.lingering_wf, {"xs": [0, 1, 2], "marker_dir": str(marks)},
                               "linger")
    assert summary["phase"] == WorkflowStatusPhase.SUCCESS, summary
    first, second, third = summary["outputs"]["o0"]
    # Its thread ran to the end and its atexit hook ran, in its process, before the next item started.
    assert (marks / "thread-finished").read_text() == str(first)
    assert (marks / "atexit-ran").read_text() == str(first)
    assert second != first, "a process an item left a thread in must not run another item"
    assert third == second, "a clean item's worker runs the next sibling"


def _item_request(tmp_path, name: str, task_name: str, inputs: dict) -> tuple[list[str], str, str]:
    """A pyflyte-execute command for a task of tests/propeller/warm_tasks.py: (argv, cwd, log)."""
    folder = tmp_path / name
    folder.mkdir(parents=True)
    inputs_pb = folder / "inputs.pb"
    inputs_pb.write_bytes(h.literal_map(inputs).SerializeToString())
    argv = [PY, "-m", "flytekit.bin.entrypoint", "pyflyte-execute", "--inputs", str(inputs_pb), "--output-prefix",
            str(folder / "out"), "--raw-output-data-prefix", str(folder / "raw"), "--resolver",
            "flytekit.core.python_auto_container.default_task_resolver", "--", "task-module",
            "tests.propeller.warm_tasks", "task-name", task_name]
    work = folder / "work"
    work.mkdir()
    return argv, str(work), str(folder / "log")


def _exited(attempt) -> bool:
    return attempt.poll() is not None


def test_a_late_kill_of_a_finished_item_does_not_reach_the_sibling_its_worker_runs_now(tmp_path):
    pool = WarmPool(tmp_path / "logs", worker_idle_seconds=1.0)
    try:
        argv, cwd, log = _item_request(tmp_path, "a", "nap", {"seconds": 0.0})
        first = pool.launch(argv, dict(os.environ, PYTHONPATH=str(h.REPO)), cwd, log, f"{cwd}.tmp", group="siblings")
        asyncio.run(h.wait_for(lambda: _exited(first)))
        assert first.returncode == 0 and not first.reused
        argv, cwd, log = _item_request(tmp_path, "b", "nap", {"seconds": 1.5})
        second = pool.launch(argv, dict(os.environ, PYTHONPATH=str(h.REPO)), cwd, log, f"{cwd}.tmp", group="siblings")
        assert second.reused and second.pid == first.pid
        assert first.kill(signal.SIGTERM) is True  # nothing to kill any more: no signal sent
        # Even a kill naming the pid (sent before the first item's exit was heard) must not reach the second.
        first.zygote.send(messages.Kill(pid=first.pid, id=first.request_id, sig=int(signal.SIGTERM)))
        asyncio.run(h.wait_for(lambda: _exited(second)))
        assert second.returncode == 0
        assert (tmp_path / "b" / "out" / "outputs.pb").exists()
        # An idle worker is retired: its process ends on its own.
        asyncio.run(h.wait_for(lambda: _gone(first.pid), timeout=15))
    finally:
        pool.close()


def test_a_kill_reaches_the_item_a_worker_runs(tmp_path):
    pool = WarmPool(tmp_path / "logs")
    try:
        argv, cwd, log = _item_request(tmp_path, "a", "nap", {"seconds": 0.0})
        first = pool.launch(argv, dict(os.environ, PYTHONPATH=str(h.REPO)), cwd, log, f"{cwd}.tmp", group="siblings")
        asyncio.run(h.wait_for(lambda: _exited(first)))
        argv, cwd, log = _item_request(tmp_path, "b", "nap", {"seconds": 30.0})
        second = pool.launch(argv, dict(os.environ, PYTHONPATH=str(h.REPO)), cwd, log, f"{cwd}.tmp", group="siblings")
        assert second.reused
        assert second.kill(signal.SIGTERM) is True
        asyncio.run(h.wait_for(lambda: _exited(second)))
        assert second.returncode == -signal.SIGTERM
        assert not (tmp_path / "b" / "out" / "outputs.pb").exists()
    finally:
        pool.close()


def test_the_next_item_goes_to_the_idle_worker_without_an_answer_and_ends_with_it_if_it_died_meanwhile(tmp_path):
    pool = WarmPool(tmp_path / "logs")
    try:
        first = _launch_item(pool, tmp_path, "a", 0.0)
        asyncio.run(h.wait_for(lambda: _exited(first)))
        assert first.returncode == 0
        zygote = first.zygote.proc.pid
        # The zygote can neither answer nor see its worker die: the server still counts the worker as idle.
        os.kill(zygote, signal.SIGSTOP)
        try:
            os.kill(first.pid, signal.SIGKILL)
            second = _launch_item(pool, tmp_path, "b", 0.0)  # returns at once: nothing to wait for
            assert second.reused and second.pid == first.pid
        finally:
            os.kill(zygote, signal.SIGCONT)
        # However the zygote orders the request and the worker's death, the attempt ends with the worker's exit.
        asyncio.run(h.wait_for(lambda: _exited(second)))
        assert second.returncode == -signal.SIGKILL
        assert not (tmp_path / "b" / "out" / "outputs.pb").exists()
        # The next item gets a process of its own.
        third = _launch_item(pool, tmp_path, "c", 0.0)
        asyncio.run(h.wait_for(lambda: _exited(third)))
        assert third.returncode == 0 and not third.reused and third.pid != first.pid
        assert (tmp_path / "c" / "out" / "outputs.pb").exists()
    finally:
        pool.close()


def test_an_item_in_a_reused_worker_has_a_pid_file_naming_the_worker_while_it_runs(tmp_path):
    """What a restarted server finds the worker by when it crashed before it persisted the pid."""
    pool = WarmPool(tmp_path / "logs")
    try:
        first = _launch_item(pool, tmp_path, "a", 0.0)
        asyncio.run(h.wait_for(lambda: _exited(first)))
        second = _launch_item(pool, tmp_path, "b", 60.0)
        assert second.reused and second.pid == first.pid
        work = str(tmp_path / "b" / "work")
        asyncio.run(h.wait_for(lambda: find_by_recorded_pid(work) is not None))
        assert find_by_recorded_pid(work) == (first.pid, processes.start_time(first.pid))
        assert second.poll() is None, "the item still runs"
        assert second.kill(signal.SIGKILL)
        asyncio.run(h.wait_for(lambda: _exited(second)))
    finally:
        pool.close()


def test_flytekits_log_setup_is_kept_for_the_next_item_unless_what_it_reads_differs(tmp_path):
    """Each item's PYTHONPATH names its own code folder: that alone sets flytekit's loggers up no differently."""
    pool = WarmPool(tmp_path / "logs")
    try:
        seen = []
        for name, level in (("a", None), ("b", None), ("c", "10")):
            argv, cwd, log = _item_request(tmp_path, name, "log_setup_probe", {"tag": name})
            env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(h.REPO), cwd]))
            env.pop("FLYTE_SDK_LOGGING_LEVEL", None)
            if level is not None:
                env["FLYTE_SDK_LOGGING_LEVEL"] = level
            attempt = pool.launch(argv, env, cwd, log, f"{cwd}.tmp", group="siblings")
            asyncio.run(h.wait_for(lambda: _exited(attempt)))  # noqa: B023 - waited for before the next one
            assert attempt.returncode == 0 and attempt.reused == (name != "a")
            seen.append(_output(tmp_path / name))
        # b found a's handler; c's logging level differs, so its loggers were set up again.
        assert seen == ["", "a", ""]
    finally:
        pool.close()


def _launch_item(pool: WarmPool, tmp_path, name: str, seconds: float):
    argv, cwd, log = _item_request(tmp_path, name, "nap", {"seconds": seconds})
    return pool.launch(argv, dict(os.environ, PYTHONPATH=str(h.REPO)), cwd, log, f"{cwd}.tmp", group="siblings")


def _launch_gate(pool: WarmPool, tmp_path, opened):
    """An item of the siblings that runs until the file `opened` exists."""
    argv, cwd, log = _item_request(tmp_path, "a", "gate", {"path": str(opened)})
    return pool.launch(argv, dict(os.environ, PYTHONPATH=str(h.REPO)), cwd, log, f"{cwd}.tmp", group="siblings")


def _start_news(attempt) -> threading.Event:
    """Set once the attempt's zygote says where it runs, or that it ended without running."""
    news = threading.Event()
    attempt.on_start(lambda _: news.set())
    attempt.on_exit(news.set)
    return news


def _started(attempt):
    """The attempt, once its zygote said where it runs (or that it ended without running)."""
    assert _start_news(attempt).wait(60)
    return attempt


def _end_both(first, second) -> None:
    """The quick second item ends by itself, and the long first one, still running, when killed."""
    asyncio.run(h.wait_for(lambda: _exited(second)))
    assert second.returncode == 0
    assert first.kill(signal.SIGTERM)
    asyncio.run(h.wait_for(lambda: _exited(first)))


def test_with_as_many_busy_workers_as_processors_an_item_waits_for_one_rather_than_a_new_process(tmp_path):
    pool = WarmPool(tmp_path / "logs", queue_seconds=60.0, processors=1, short_seconds=60.0)
    try:
        first = _launch_item(pool, tmp_path, "a", 2.0)
        # Sent at once; the zygote says where it runs (Started) once the first item's worker took it.
        second = _started(_launch_item(pool, tmp_path, "b", 0.0))
        assert _exited(first) and first.returncode == 0
        assert second.reused and second.pid == first.pid
        asyncio.run(h.wait_for(lambda: _exited(second)))
        assert second.returncode == 0
        assert (tmp_path / "b" / "out" / "outputs.pb").exists()
    finally:
        pool.close()


def test_an_item_waits_for_a_busy_worker_no_longer_than_the_queue_seconds(tmp_path):
    pool = WarmPool(tmp_path / "logs", queue_seconds=0.5, processors=1, short_seconds=60.0)
    try:
        first = _launch_item(pool, tmp_path, "a", 60.0)
        second = _started(_launch_item(pool, tmp_path, "b", 0.0))
        assert not second.reused and second.pid != first.pid
        assert not _exited(first)  # started beside the first, not after it
        _end_both(first, second)
    finally:
        pool.close()


def test_an_item_waiting_for_a_busy_worker_when_the_zygote_goes_never_starts(tmp_path):
    """The server stopping (its end of the zygote's socket closed) drops what waits: nothing of it ran, so a
    restarted server starts it afresh (the attempt is still launching)."""
    pool = WarmPool(tmp_path / "logs", queue_seconds=60.0, processors=1, short_seconds=60.0)
    try:
        first = _started(_launch_item(pool, tmp_path, "a", 60.0))
        second = _launch_item(pool, tmp_path, "b", 0.0)
        assert not _start_news(second).wait(1.0)  # waiting for the first item's worker
        first.zygote.stop()
        assert _started(second).lost and second.pid is None and second.error is None
        assert not (tmp_path / "b" / "work.warm" / "pid").exists()
        assert not (tmp_path / "b" / "out").exists() and not (tmp_path / "b" / "log").exists()
        # The first item runs on, as a running attempt does when its zygote goes.
        assert first.orphaned and processes.is_alive(first.pid, first.start_time)
        processes.kill_group(first.pid, first.start_time, signal.SIGKILL)
    finally:
        pool.close()


def test_the_pool_counts_the_items_a_zygote_holds_until_each_starts(tmp_path):
    """What tells the plugin whether the workers have work without the server (plugins/local/warm.py's news), and
    whether an attempt waits for a worker."""
    pool = WarmPool(tmp_path / "logs", queue_seconds=60.0, processors=1, short_seconds=60.0)
    try:
        opened = tmp_path / "open"
        first = _started(_launch_gate(pool, tmp_path, opened))
        zygote = first.zygote
        assert zygote.held("siblings") == 0
        second, third = (_launch_item(pool, tmp_path, name, 0.0) for name in ("b", "c"))
        assert zygote.held("siblings") == 2 and zygote.held("others") == 0  # the first item's worker is busy
        # More held than processors when the third was sent: it surely waits (the plugin reports it queued).
        assert not second.waits and third.waits and zygote.backlogged("siblings")
        opened.touch()
        asyncio.run(h.wait_for(lambda: _exited(third)))  # each taken by that worker, one after the other
        assert zygote.held("siblings") == 0
        assert second.pid == third.pid == first.pid and second.returncode == third.returncode == 0
    finally:
        pool.close()


def test_a_kill_drops_an_item_still_waiting_for_a_busy_worker_which_then_ends_as_killed(tmp_path):
    pool = WarmPool(tmp_path / "logs", queue_seconds=60.0, processors=1, short_seconds=60.0)
    try:
        first = _started(_launch_item(pool, tmp_path, "a", 60.0))
        second = _launch_item(pool, tmp_path, "b", 0.0)
        assert second.kill(signal.SIGTERM)
        asyncio.run(h.wait_for(lambda: _exited(second)))
        assert second.returncode == -signal.SIGTERM and second.pid is None
        assert not (tmp_path / "b" / "work.warm" / "pid").exists() and not (tmp_path / "b" / "out").exists()
        assert not _exited(first)  # the worker it waited for runs on
        assert first.kill(signal.SIGKILL)
        asyncio.run(h.wait_for(lambda: _exited(first)))
    finally:
        pool.close()


def test_a_zygote_that_leaves_a_request_unanswered_is_stopped_and_the_attempt_ends_unstarted(tmp_path, monkeypatch):
    monkeypatch.setattr(pool_module, "FORK_ANSWER_SECONDS", 0.5)
    pool = WarmPool(tmp_path / "logs")
    try:
        first = _started(_launch_item(pool, tmp_path, "a", 60.0))
        zygote = first.zygote
        os.kill(zygote.proc.pid, signal.SIGSTOP)  # wedged
        second = _launch_item(pool, tmp_path, "b", 0.0)
        assert _started(second).lost and second.error is None
        asyncio.run(h.wait_for(lambda: zygote.proc.poll() is not None))
        assert zygote.proc.returncode == -signal.SIGKILL
        # What it had started runs on, watched as an orphan.
        assert first.orphaned and processes.is_alive(first.pid, first.start_time)
        processes.kill_group(first.pid, first.start_time, signal.SIGKILL)
    finally:
        pool.close()


def test_an_item_does_not_wait_for_a_worker_whose_item_runs_longer_than_the_short_seconds(tmp_path):
    """A long or sleeping item is not worth waiting for: however the request and the item's age cross, the next
    item gets a process of its own while the first still runs."""
    pool = WarmPool(tmp_path / "logs", queue_seconds=60.0, processors=1, short_seconds=0.2)
    try:
        opened = tmp_path / "open"
        first = _started(_launch_gate(pool, tmp_path, opened))
        second = _started(_launch_item(pool, tmp_path, "b", 0.0))
        assert not second.reused and second.pid != first.pid
        asyncio.run(h.wait_for(lambda: _exited(second)))
        assert second.returncode == 0 and not _exited(first)
        opened.touch()
        asyncio.run(h.wait_for(lambda: _exited(first)))
        assert first.returncode == 0
    finally:
        pool.close()


def test_with_fewer_busy_workers_than_processors_an_item_gets_a_process_of_its_own_at_once(tmp_path):
    pool = WarmPool(tmp_path / "logs", queue_seconds=60.0, processors=4096)
    try:
        first = _launch_item(pool, tmp_path, "a", 60.0)
        second = _started(_launch_item(pool, tmp_path, "b", 0.0))
        assert not second.reused and not _exited(first)
        _end_both(first, second)
    finally:
        pool.close()


def _launch_in(pool: WarmPool, tmp_path, name: str, seconds: float, group: str):
    argv, cwd, log = _item_request(tmp_path, name, "nap", {"seconds": seconds})
    return pool.launch(argv, dict(os.environ, PYTHONPATH=str(h.REPO)), cwd, log, f"{cwd}.tmp", group=group)


def test_a_zygote_with_as_many_children_as_max_processes_starts_a_request_once_one_ended(tmp_path):
    pool = WarmPool(tmp_path / "logs", max_processes=1)
    try:
        opened = tmp_path / "open"
        first = _started(_launch_gate(pool, tmp_path, opened))
        second = _launch_in(pool, tmp_path, "b", 0.0, "others")  # another group: a process of its own
        assert not _start_news(second).wait(1.0), "started beside the first, past max_processes"
        opened.touch()
        asyncio.run(h.wait_for(lambda: _exited(second)))
        assert second.returncode == 0 and first.returncode == 0 and second.pid != first.pid
    finally:
        pool.close()


def test_a_zygote_with_no_room_retires_an_idle_worker_of_another_group_for_a_new_process(tmp_path):
    pool = WarmPool(tmp_path / "logs", max_processes=2, worker_idle_seconds=300.0)
    try:
        opened = tmp_path / "open"
        busy = _started(_launch_gate(pool, tmp_path, opened))
        idle = _launch_in(pool, tmp_path, "b", 0.0, "others")
        asyncio.run(h.wait_for(lambda: _exited(idle)))
        # Two children (a busy worker, an idle one of "others"): a third group's item needs the idle one's room.
        third = _started(_launch_in(pool, tmp_path, "c", 0.0, "thirds"))
        asyncio.run(h.wait_for(lambda: _exited(third)))
        assert third.returncode == 0 and third.pid not in (busy.pid, idle.pid)
        assert _gone(idle.pid)
        # The server heard the idle worker is gone: the next item of its group gets a process of its own.
        again = _started(_launch_in(pool, tmp_path, "d", 0.0, "others"))
        assert not again.reused
        opened.touch()
        asyncio.run(h.wait_for(lambda: _exited(again) and _exited(busy)))
        assert again.returncode == 0 and busy.returncode == 0
    finally:
        pool.close()


def test_a_map_task_runs_with_warm_queue_seconds_on(tmp_path):
    marks = tmp_path / "marks"
    marks.mkdir()
    ctx, key, sink, status, _ = run_workflow(tmp_path / "map", wt.timed_items_wf,
                                             {"xs": [0, 1, 2, 3, 4], "marker_dir": str(marks)}, "queued",
                                             warm_queue_seconds=60.0)
    assert status.phase == WorkflowStatusPhase.SUCCESS, status.error
    assert h.outputs(ctx, key) == {"o0": [0, 1, 2, 3, 4]}
    assert len(_spans(marks)) == 5


def test_an_item_running_in_a_reused_worker_outlives_the_engine_and_a_new_engine_adopts_it(tmp_path):
    marks = tmp_path / "marks"
    marks.mkdir()
    ctx = h.make_context(tmp_path)
    key = h.create_execution(ctx, h.compile_entity(wt.sleepy_items_wf), {"xs": [0, 1, 2], "marker_dir": str(marks)},
                             "adoptitem")

    def ran() -> list[tuple[int, int]]:
        return [tuple(map(int, line.split())) for line in markers(marks, "ran")]

    async def first_life():
        engine = Engine(ctx, h.RecordingSink())
        await engine.start()
        engine.notify(key)
        try:
            await h.wait_for(lambda: len(ran()) == 2)
            return engine.plugins.default.warm
        finally:
            await engine.stop()

    warm = asyncio.run(first_life())
    ctx.db.dispose()
    (_, first_pid), (_, worker) = ran()
    assert worker == first_pid and warm.reused == 1, "item 1 must run in the worker that ran item 0"
    assert processes.start_time(worker) is not None, "the worker must finish its item without its engine"
    ctx, sink, status = _second_life(tmp_path, key)
    assert status.phase == WorkflowStatusPhase.SUCCESS, status.error
    assert h.outputs(ctx, key) == {"o0": [0, 10, 20]}
    assert [x for x, _ in ran()] == [0, 1, 2], "no item runs twice"
    assert _gone(worker), "the worker ends after its item once its zygote is gone"


def _spans(marks) -> list[tuple[float, float]]:
    return sorted(tuple(map(float, line.split())) for line in markers(marks, "spans"))


def _one_at_a_time(spans: list[tuple[float, float]]) -> bool:
    return all(end <= next_start for (_, end), (next_start, _) in zip(spans, spans[1:], strict=False))


def test_max_task_processes_is_read_from_the_config_or_its_earlier_name_and_cannot_be_negative(tmp_path):
    path = tmp_path / "flytelite.yaml"
    path.write_text("engine:\n  max_task_processes: 3\n")
    assert Config.load(path).engine.max_task_processes == 3
    path.write_text("engine:\n  warm_pool_size: 5\n")
    assert Config.load(path).engine.max_task_processes == 5
    assert Config().engine.max_task_processes == 0  # from the machine
    with pytest.raises(ValueError, match="max_task_processes must be 0 \\(from the machine\\) or more, not -1"):
        EngineConfig(max_task_processes=-1)


def test_warm_queue_seconds_is_read_from_the_config_one_second_by_default_and_cannot_be_negative(tmp_path):
    path = tmp_path / "flytelite.yaml"
    path.write_text("engine:\n  warm_queue_seconds: 0.05\n")
    assert Config.load(path).engine.warm_queue_seconds == 0.05
    assert Config().engine.warm_queue_seconds == 1.0
    with pytest.raises(ValueError, match="warm_queue_seconds must be 0 \\(off\\) or more, not -1"):
        EngineConfig(warm_queue_seconds=-1)


@pytest.mark.parametrize("warm", [True, False])
def test_with_one_task_slot_attempts_wait_for_it_in_queued(tmp_path, warm):
    marks = tmp_path / "marks"
    marks.mkdir()
    ctx, key, sink, status, _ = run_workflow(tmp_path / "tasks", wt.two_timed_wf, {"marker_dir": str(marks)},
                                             "pool1", max_task_processes=1, warm_workers=warm)
    assert status.phase == WorkflowStatusPhase.SUCCESS, status.error
    assert h.outputs(ctx, key) == {"o0": 1, "o1": 2}
    assert len(_spans(marks)) == 2 and _one_at_a_time(_spans(marks)), _spans(marks)
    reasons = [e.reason for node in ("n0", "n1") for e in sink.task_events(node)]
    assert any("waiting for a task slot: all 1 (engine.max_task_processes) run tasks" in r for r in reasons), reasons

    # A map task's items share the slot too (one worker runs them one after another).
    (marks / "spans").unlink()
    ctx, key, sink, status, _ = run_workflow(tmp_path / "map", wt.timed_items_wf,
                                             {"xs": [0, 1, 2], "marker_dir": str(marks)}, "pool1map",
                                             max_task_processes=1, warm_workers=warm)
    assert status.phase == WorkflowStatusPhase.SUCCESS, status.error
    assert h.outputs(ctx, key) == {"o0": [0, 1, 2]}
    assert len(_spans(marks)) == 3 and _one_at_a_time(_spans(marks)), _spans(marks)


def test_an_item_waiting_for_the_warm_slot_renders_its_command_once_until_the_slot_is_free(tmp_path, monkeypatch):
    """Every freed slot wakes the map's round, in which each waiting item tries again: it must not render its
    command and make its folders again while the pool is still full."""
    rendered: collections.Counter[str] = collections.Counter()
    render = FlytekitProcess.command

    def counting(process, tctx, attempt):
        rendered[attempt.marker] += 1
        return render(process, tctx, attempt)

    monkeypatch.setattr(FlytekitProcess, "command", counting)
    marks = tmp_path / "marks"
    marks.mkdir()
    ctx, key, sink, status, _ = run_workflow(tmp_path / "map", wt.timed_items_wf,
                                             {"xs": [0, 1, 2, 3, 4], "marker_dir": str(marks)}, "pool1wait",
                                             max_task_processes=1)
    assert status.phase == WorkflowStatusPhase.SUCCESS, status.error
    assert h.outputs(ctx, key) == {"o0": [0, 1, 2, 3, 4]}
    assert len(_spans(marks)) == 5 and _one_at_a_time(_spans(marks)), _spans(marks)
    # Rendered once, when it holds the slot.
    assert rendered == dict.fromkeys(rendered, 1) and len(rendered) == 5, rendered


def test_a_freed_task_slot_wakes_each_waiter_once_however_many_of_its_attempts_wait():
    """A map's waiting items share one waiter (their execution): a freed slot wakes it once, not once per item."""
    slots = TaskSlots(1)
    woken: list[str] = []
    assert slots.take("a", lambda: woken.append("a"))
    for item in range(3):
        assert not slots.take(f"item{item}", lambda: woken.append("map"), waiter="map")
    assert not slots.take("b", lambda: woken.append("other"), waiter="other")
    assert slots.reason == "waiting for a task slot: all 1 (engine.max_task_processes) run tasks"
    slots.release("a")
    slots.release("a")  # released once: a second release frees nothing and wakes no one
    assert sorted(woken) == ["map", "other"]
    assert slots.take("item0", lambda: woken.append("late"), waiter="map") and slots.in_use() == 1


def test_an_item_whose_import_registers_a_type_transformer_ends_its_worker(tmp_path):
    """Importing the module again in the same process would fail ('already registered'): no reuse."""
    from tests.propeller import warm_registering as wr

    pids = tmp_path / "pids"
    pids.mkdir()
    summary, forks, ctx = _run(tmp_path, True, wr.thirds_wf, {"xs": [1, 2, 3], "pids_dir": str(pids)}, "thirds")
    assert summary["phase"] == WorkflowStatusPhase.SUCCESS, summary
    assert summary["outputs"]["o0"] == ["1/3", "2/3", "1"]
    assert len(set(markers(pids, "pids"))) == 3, "each item in a process of its own"
