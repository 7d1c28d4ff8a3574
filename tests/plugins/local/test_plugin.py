"""Real flytekit tasks run through the local-process plugin: outputs, errors, retries, timeouts, abort."""

from __future__ import annotations

import asyncio
import subprocess
import time
from pathlib import Path

import pytest
from flyteidl.core import literals_pb2

from flytelite.plugins.local.cleaner import FolderCleaner
from flytelite.plugins.local.plugin import LocalProcessPlugin
from flytelite.plugins.machinery import processes
from flytelite.propeller.engine import Engine
from flytelite.propeller.phases import NodeStatusPhase, WorkflowStatusPhase
from flytelite.store.models import FlyteWorkflow
from tests.e2e.flyte_cli import wait_for
from tests.propeller import flyte_tasks as ft
from tests.propeller import harness as h


def run_workflow(tmp_path, entity, inputs: dict, name: str, *, during=None, **engine_cfg):
    ctx = h.make_context(tmp_path, **engine_cfg)
    ctx.public_url = "http://localhost:30080"
    key = h.create_execution(ctx, h.compile_entity(entity), inputs, name)
    sink = h.RecordingSink()

    async def go():
        engine = Engine(ctx, sink)
        await engine.start()
        try:
            engine.notify(key)
            if during is not None:
                await during(ctx, key, engine)
            return await h.run_to_completion(engine, ctx, key)
        finally:
            await engine.stop()

    started = time.monotonic()
    status = asyncio.run(go())
    return ctx, key, sink, status, time.monotonic() - started


def markers(path: Path, name: str) -> list[str]:
    f = path / name
    return f.read_text().splitlines() if f.exists() else []


def test_tasks_run_as_processes_and_produce_workflow_outputs(tmp_path):
    ctx, key, sink, status, _ = run_workflow(tmp_path, ft.add_then_square, {"a": 2, "b": 3}, "ok")
    assert status.phase == WorkflowStatusPhase.SUCCESS
    assert h.outputs(ctx, key) == {"o0": 25}
    assert sink.node_phases("n0") == ["QUEUED", "RUNNING", "SUCCEEDED"]
    # With a local blob store the process starts in the round that prepares it: no QUEUED report first.
    assert sink.task_phases("n0") == [(0, "RUNNING"), (0, "SUCCEEDED")]
    done = sink.task_events("n0")[-1]
    assert done.task_id.name == "tests.propeller.flyte_tasks.add" and done.task_type == "python-task"
    assert done.parent_node_execution_id.execution_id.name == "ok"
    assert done.output_uri == f"{ctx.blobs.execution_dir(*key)}/n0/data/0/outputs.pb"
    assert done.input_uri == f"{ctx.blobs.execution_dir(*key)}/n0/data/inputs.pb"
    assert done.producer_id == "flytelite" and done.metadata.generated_name == "ok_n0_0"
    log_uri = done.logs[0].uri
    assert log_uri == "http://localhost:30080/logs/flytesnacks-development-ok/n0-0.log"
    log_file = ctx.config.logs_dir / "flytesnacks-development-ok" / "n0-0.log"
    assert log_file.exists()
    # The attempt's working directory is cleaned up; its log stays.
    assert not (ctx.config.work_dir / "flytesnacks-development-ok" / "n0" / "0").exists()
    outputs = ctx.blobs.read_proto(done.output_uri, literals_pb2.LiteralMap)
    assert outputs.literals["o0"].scalar.primitive.integer == 5


def test_user_error_fails_with_the_users_message_and_no_retry(tmp_path):
    ctx, key, sink, status, _ = run_workflow(tmp_path, ft.failing_wf, {"x": 3}, "userr")
    assert status.phase == WorkflowStatusPhase.FAILED
    err = h.workflow_error(sink)
    assert "x must be negative, got 3" in err.message and err.kind == 1  # USER
    assert sink.task_phases("n0")[-1] == (0, "FAILED")
    assert status.nodes["n0"].attempts == 0  # a non-recoverable user error is not retried (as in Flyte)


def test_recoverable_user_errors_are_retried(tmp_path):
    marks = tmp_path / "marks"
    ctx, key, sink, status, _ = run_workflow(tmp_path, ft.flaky_wf, {"marker_dir": str(marks)}, "flaky")
    assert status.phase == WorkflowStatusPhase.SUCCESS, status.error
    assert h.outputs(ctx, key) == {"o0": 2}
    assert [line.split()[1] for line in markers(marks, "flaky")] == ["0", "1", "2"]
    phases = sink.task_phases("n0")
    assert (0, "FAILED") in phases and (1, "FAILED") in phases and phases[-1] == (2, "SUCCEEDED")
    failed = [e for e in sink.task_events("n0") if e.phase == 5][0]
    assert "transient failure on attempt 0" in failed.error.message


def test_killed_process_is_a_system_error_and_is_retried(tmp_path):
    marks = tmp_path / "marks"
    ctx, key, sink, status, _ = run_workflow(tmp_path, ft.dies_once_wf, {"marker_dir": str(marks)}, "killed")
    assert status.phase == WorkflowStatusPhase.SUCCESS, status.error
    assert h.outputs(ctx, key) == {"o0": 1}
    assert status.nodes["n0"].system_failures == 1
    failed = [e for e in sink.task_events("n0") if e.phase == 5][0]
    assert failed.retry_attempt == 0 and failed.error.code == "ProcessLost" and failed.error.kind == 2
    assert "killed by signal SIGKILL" in failed.error.message


@pytest.mark.parametrize(("keep", "what"), [(0, "is empty"), (5, "holds no error (5 bytes; cut short?)")])
def test_an_empty_or_cut_short_error_file_is_a_recoverable_system_error_with_the_logs_end(tmp_path, keep, what):
    marks = tmp_path / "marks"
    ctx, key, sink, status, _ = run_workflow(tmp_path, ft.error_file_cut_once_wf, {"marker_dir": str(marks),
                                                                                   "keep": keep}, f"cut{keep}")
    assert status.phase == WorkflowStatusPhase.SUCCESS, status.error
    assert h.outputs(ctx, key) == {"o0": 1}
    assert status.nodes["n0"].system_failures == 1
    failed = [e for e in sink.task_events("n0") if e.phase == 5][0]
    assert failed.retry_attempt == 0 and failed.error.code == "ErrorFileBadFormat" and failed.error.kind == 2
    path = f"{ctx.blobs.execution_dir(*key)}/n0/data/0/error.pb"
    assert f"the task's error file {path} {what}" in failed.error.message, failed.error.message
    assert "No space left on device" in failed.error.message


def test_timeout_kills_the_process_and_times_out_the_node(tmp_path):
    marks = tmp_path / "marks"
    pids = []

    async def note_pid(ctx, key, engine):
        # On a loaded machine the timeout may end the attempt before it was seen running: then no pid.
        pids.append(await h.wait_for(lambda: h.running_pid(ctx, key, "n0") or (h.load(ctx, key)[0].done and -1)))

    ctx, key, sink, status, took = run_workflow(tmp_path, ft.too_slow_wf, {"marker_dir": str(marks)}, "slow",
                                                during=note_pid)
    assert status.phase == WorkflowStatusPhase.FAILED
    assert status.nodes["n0"].phase == NodeStatusPhase.TIMED_OUT
    assert sink.node_phases("n0")[-1] == "TIMED_OUT"
    assert sink.task_phases("n0")[-1] == (0, "ABORTED")
    err = h.workflow_error(sink)
    assert err.code == "TimeoutExpired" and "timeout [2s] expired" in err.message
    # The process the engine started is gone (it may have been killed before it marked itself, when starting
    # an interpreter took a loaded machine longer than the timeout).
    assert pids[0] == -1 or _gone(pids[0])
    for line in markers(marks, "too_slow"):
        assert _gone(int(line.split()[0]))


def test_abort_kills_running_process_and_reports_aborted(tmp_path):
    marks = tmp_path / "marks"

    async def terminate_when_sleeping(ctx, key, engine):
        await h.wait_for(lambda: markers(marks, "sleep_then"))
        with ctx.db.session() as s:
            s.get(FlyteWorkflow, key).abort_cause = "stopped by the user"
        engine.notify(key)

    ctx, key, sink, status, took = run_workflow(
        tmp_path, ft.restart_wf, {"marker_dir": str(marks), "seconds": 60.0}, "abort", during=terminate_when_sleeping)
    assert status.phase == WorkflowStatusPhase.ABORTED
    assert sink.workflow_phases()[-1] == "ABORTED"
    assert sink.node_phases("n1")[-1] == "ABORTED"
    assert sink.task_phases("n1")[-1] == (0, "ABORTED")
    pid = int(markers(marks, "sleep_then")[0].split()[0])
    assert _gone(pid)
    assert not markers(marks, "last")


def _gone(pid: int, timeout: float = 10) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if processes.start_time(pid) is None:
            return True
        time.sleep(0.05)
    return False


def test_finished_attempts_folders_wait_while_tasks_run_unless_they_waited_too_long(tmp_path, monkeypatch):
    """Deleting files makes the file system slow to create the next ones: folders handed over while a task
    runs are deleted once none runs, or once the oldest of them waited MAX_WAIT_SECONDS."""
    folders = [tmp_path / f"n{i}-0" for i in range(2)]
    for folder in folders:
        (folder / "code").mkdir(parents=True)
    looks = []
    running = True

    def busy() -> bool:
        looks.append(running)
        return running

    cleaner = FolderCleaner(tmp_path / ".trash", str(tmp_path / "tmp"), busy=busy)
    try:
        cleaner.discard(str(folders[0]))
        wait_for(lambda: looks.count(True) >= 3, "the sweep to look three times whether a task runs")
        assert folders[0].exists()
        running = False
        wait_for(lambda: not folders[0].exists(), "the folder to be deleted once no task runs")
        running = True
        monkeypatch.setattr("flytelite.plugins.local.cleaner.MAX_WAIT_SECONDS", 0.0)
        cleaner.discard(str(folders[1]))
        wait_for(lambda: not folders[1].exists(), "a folder that waited too long to be deleted while a task runs")
    finally:
        cleaner.close()


def test_what_the_cleaner_is_handed_stays_in_its_journal_until_deleted(tmp_path):
    """Folders handed over are appended to the server's journal, which is emptied once they are deleted and
    removed when the server stops with nothing left to delete."""
    folders = [tmp_path / "work" / "run" / f"n{i}-0" for i in range(2)]
    for folder in folders:
        folder.mkdir(parents=True)
    running = True
    cleaner = FolderCleaner(tmp_path / "work" / ".trash", str(tmp_path / "tmp"), busy=lambda: running)
    try:
        cleaner.discard(*map(str, folders))
        [journal] = (tmp_path / "work" / ".discarding").iterdir()
        assert journal.read_text().splitlines() == [str(f) for f in folders]
        running = False
        wait_for(lambda: not any(f.exists() for f in folders), "the folders to be deleted once no task runs")
        wait_for(lambda: journal.read_text() == "", "the journal to be emptied")
    finally:
        cleaner.close()
    assert not journal.exists()


def test_the_next_start_deletes_what_a_killed_servers_journal_names_and_nothing_else(tmp_path):
    """A server killed before its cleaner deleted what it was handed leaves its journal: the next start on the same
    machine deletes what it names inside the attempts' folders and the temp root, and removes it. The journals of
    live servers and of other machines' servers are theirs, and a damaged line names nothing."""
    work, temp_root = tmp_path / "work", tmp_path / "tmp"
    handed = [work / "run" / "n0-0", work / "run" / "n0-0.pid", temp_root / "0123abcd"]
    kept = [work / "run" / "n1-0", tmp_path / "outside", work / "run" / "n2-0", work / "run" / "n3-0"]
    for path in handed + kept:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.mkdir() if not path.name.endswith(".pid") else path.write_text("1 2\n")
    dead_pid = 2**22 + 1  # above the largest pid Linux gives: no such process
    live_server = subprocess.Popen(["sleep", "600"])
    journals = work / ".discarding"
    journals.mkdir()
    dead = journals / f"{dead_pid}-1-here"
    dead.write_text("".join(f"{p}\n" for p in handed) + f"{work}\n{tmp_path / 'outside'}\n"
                    f"{work / 'run' / '..' / '..' / 'outside'}\n{journals}\n{kept[0]}")  # the last line was cut short
    live = journals / f"{live_server.pid}-{processes.start_time(live_server.pid)}-here"
    live.write_text(f"{kept[2]}\n")
    elsewhere = journals / f"{dead_pid}-1-there"
    elsewhere.write_text(f"{kept[3]}\n")
    cleaner = FolderCleaner(work / ".trash", str(temp_root), machine="here")
    try:
        cleaner.start()
        wait_for(lambda: not any(p.exists() for p in handed), "what the dead server's journal names to be deleted")
        wait_for(lambda: not dead.exists(), "the dead server's journal to be removed")
    finally:
        cleaner.close()
        live_server.kill()
        live_server.wait()
    assert all(p.exists() for p in kept) and work.is_dir()
    assert live.read_text() == f"{kept[2]}\n" and elsewhere.read_text() == f"{kept[3]}\n"


def test_finished_attempts_folders_are_deleted_in_the_background_and_what_a_stop_left_after_the_next_start(
        tmp_path, monkeypatch):
    """A finished attempt's folders are deleted where they are, by the cleaner thread. close() does not wait
    for that (a thousand of them kept a loaded machine's server stopping for seconds): it moves what is left
    into the trash, which the next start empties."""
    ctx = h.make_context(tmp_path, warm_workers=False)
    trash = ctx.config.work_dir / ".trash"
    left = trash / "left-by-an-earlier-server"
    (left / "code").mkdir(parents=True)
    (left / "code" / "wf.py").write_text("x = 1\n")
    attempts = [ctx.config.work_dir / "run" / f"n{i}-0" for i in range(2)]
    for attempt in attempts:
        (attempt / "code").mkdir(parents=True)
        (attempt / "code" / "wf.py").write_text("x = 1\n")
    plugin = LocalProcessPlugin(ctx)
    loop = asyncio.new_event_loop()
    try:
        plugin.setup(loop)
        wait_for(lambda: not left.exists(), "the folder left in the trash to be deleted")
        plugin.cleaner.discard(str(attempts[0]))
        wait_for(lambda: not attempts[0].exists(), "the attempt's folder to be deleted")
        assert not any(trash.iterdir())  # deleted where it was, not moved
        # A sweep that has not started when the server stops: its folder goes into the trash.
        monkeypatch.setattr("flytelite.plugins.local.cleaner.SWEEP_DELAY_SECONDS", 60.0)
        plugin.cleaner.discard(str(attempts[1]))  # queues a sweep that waits
        plugin.cleaner.discard(str(attempts[1]))  # handed over again meanwhile: still one sweep, one move
    finally:
        plugin.close()
        loop.close()
    assert not attempts[1].exists()
    assert [sorted(p.relative_to(d).as_posix() for p in d.rglob("*")) for d in trash.iterdir()] == [["code", "code/wf.py"]]
    second = LocalProcessPlugin(ctx)
    loop = asyncio.new_event_loop()
    try:
        second.setup(loop)
        wait_for(lambda: not any(trash.iterdir()), "the trash to be emptied after the next start")
    finally:
        second.close()
        loop.close()
