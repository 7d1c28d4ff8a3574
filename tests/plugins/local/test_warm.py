"""Warm workers: every scenario run warm (forked from a zygote) and cold (a new interpreter) gives the same result.

Each parity test runs one real flytekit workflow through the real engine twice, switching only
`engine.warm_workers`, and compares what admin would see: phases, outputs, errors, retries.
"""

from __future__ import annotations

import asyncio
import dataclasses
import errno
import os
import re
import signal
import sys
import tempfile
import threading
import time
import types
from pathlib import Path

import pytest
from flyteidl.core import literals_pb2

from flytelite.config import Config, EngineConfig
from flytelite.plugins.local.plugin import LocalProcessPlugin
from flytelite.plugins.local.state import HELD_VERSION, ROOM_VERSION
from flytelite.plugins.local.workers import messages, pool
from flytelite.plugins.local.workers.child import record_pid, write_pid_file
from flytelite.plugins.local.workers.pool import (
    WarmPool,
    find_by_recorded_pid,
    pid_file,
    pyflyte_command,
    starts_alike,
    worker_group,
)
from flytelite.plugins.machinery import processes
from flytelite.plugins.machinery.core import PluginPhase, TaskExecutionContext
from flytelite.propeller.engine import Engine
from flytelite.propeller.phases import WorkflowStatusPhase
from flytelite.store.flyteworkflow import ExecutionSpec
from flytelite.store.models import FlyteWorkflow
from tests.e2e.flyte_cli import wait_for
from tests.plugins.local.test_plugin import _gone, markers, run_workflow
from tests.propeller import flyte_tasks as ft
from tests.propeller import harness as h
from tests.propeller import warm_tasks as wt
from tests.propeller.test_restart import _second_life

PY = sys.executable


def _run(tmp_path, warm: bool, entity, inputs: dict, name: str, during=None):
    """Run one workflow; the summary admin would see, and how many attempts were forked."""
    seen = {}

    async def hook(ctx, key, engine):
        seen["plugin"] = engine.plugins.default
        if during is not None:
            await during(ctx, key, engine)

    ctx, key, sink, status, _ = run_workflow(tmp_path / ("warm" if warm else "cold"), entity, inputs, name,
                                             during=hook, warm_workers=warm)
    warm_pool = seen["plugin"].warm
    assert (warm_pool is not None) == warm
    summary = {
        "phase": status.phase,
        "nodes": {n: sink.node_phases(n) for n in sorted(status.nodes) if n not in ("start-node", "end-node")},
        "tasks": {n: sink.task_phases(n) for n in sorted(status.nodes) if n not in ("start-node", "end-node")},
        "attempts": {n: (st.attempts, st.system_failures) for n, st in sorted(status.nodes.items())},
        "failures": [_error(e.error) for e in sink.events
                     if e.DESCRIPTOR.name == "TaskExecutionEvent" and e.HasField("error")],
        "log_uris": sorted({e.logs[0].uri for e in sink.events
                            if e.DESCRIPTOR.name == "TaskExecutionEvent" and len(e.logs)}),
    }
    if status.phase == WorkflowStatusPhase.SUCCESS:
        summary["outputs"] = h.outputs(ctx, key)
    else:
        errors = [e.error for e in sink.events if e.DESCRIPTOR.name == "WorkflowExecutionEvent" and e.HasField("error")]
        summary["error"] = _error(errors[-1]) if errors else None
    return summary, (warm_pool.forks if warm_pool else 0), ctx


def _error(err) -> tuple:
    message = err.message
    if err.code == "ProcessLost":  # the process died: its pid and log tail are its own
        message = re.sub(r"pid \d+", "pid N", message.split(";")[0])
        message = re.sub(r"/tmp/\S+/(warm|cold)/", "<tmp>/", message)
    return err.code, err.kind, message


def _both(tmp_path, entity, inputs_for, name: str, during_for=None):
    """(warm summary, cold summary); inputs_for/during_for get the mode's own folder (marker files)."""
    results = []
    for warm in (True, False):
        folder = tmp_path / ("warm" if warm else "cold")
        during = during_for(folder) if during_for else None
        summary, forks, _ = _run(tmp_path, warm, entity, inputs_for(folder), name, during)
        results.append((summary, forks))
    (warm_summary, forks), (cold_summary, _) = results
    assert forks >= 1, "the warm run must fork its attempts"
    return warm_summary, cold_summary


def test_outputs_are_the_same(tmp_path):
    warm, cold = _both(tmp_path, ft.add_then_square, lambda _: {"a": 2, "b": 3}, "same")
    assert warm == cold
    assert warm["outputs"] == {"o0": 25}


def test_user_error_is_the_same(tmp_path):
    warm, cold = _both(tmp_path, ft.failing_wf, lambda _: {"x": 3}, "usererr")
    assert warm == cold
    assert "x must be negative, got 3" in warm["error"][2] and warm["error"][1] == 1


def test_recoverable_error_retries_are_the_same(tmp_path):
    warm, cold = _both(tmp_path, ft.flaky_wf, lambda d: {"marker_dir": str(d / "marks")}, "flaky")
    assert warm == cold
    assert warm["outputs"] == {"o0": 2} and warm["attempts"]["n0"] == (2, 0)
    assert len(warm["failures"]) == 2 and "transient failure on attempt 0" in warm["failures"][0][2]


def test_killed_process_system_retry_is_the_same(tmp_path):
    warm, cold = _both(tmp_path, ft.dies_once_wf, lambda d: {"marker_dir": str(d / "marks")}, "killed")
    assert warm == cold
    assert warm["attempts"]["n0"] == (1, 1)
    assert warm["failures"][0][:2] == ("ProcessLost", 2) and "killed by signal SIGKILL" in warm["failures"][0][2]


def test_timeout_is_the_same_and_kills_the_process(tmp_path):
    warm, cold = _both(tmp_path, ft.too_slow_wf, lambda d: {"marker_dir": str(d / "marks")}, "slow")
    assert warm == cold
    assert warm["error"][0] == "TimeoutExpired" and warm["nodes"]["n0"][-1] == "TIMED_OUT"
    # On a loaded machine either may be killed before it marks itself (the timeout also counts the wait for a
    # zygote that is still importing flytekit); every process that did mark itself must be gone.
    for mode in ("warm", "cold"):
        for line in markers(tmp_path / mode / "marks", "too_slow"):
            assert _gone(int(line.split()[0])), f"{mode}: the timed-out process {line} still runs"


def test_terminate_is_the_same_and_kills_the_tasks_own_subprocesses(tmp_path):
    def terminate_when_spawned(folder):
        async def during(ctx, key, engine):
            await h.wait_for(lambda: markers(folder / "marks", "spawned"))
            with ctx.db.session() as s:
                s.get(FlyteWorkflow, key).abort_cause = "stopped by the user"
            engine.notify(key)
        return during

    warm, cold = _both(tmp_path, wt.spawn_and_sleep_wf, lambda d: {"marker_dir": str(d / "marks"), "seconds": 60.0},
                       "term", during_for=terminate_when_spawned)
    assert warm == cold
    assert warm["phase"] == WorkflowStatusPhase.ABORTED and warm["tasks"]["n0"][-1] == (0, "ABORTED")
    for mode in ("warm", "cold"):
        task_pid, sleep_pid = (int(x) for x in markers(tmp_path / mode / "marks", "spawned")[0].split())
        assert _gone(task_pid) and _gone(sleep_pid), f"{mode}: a process of the terminated task still runs"


def test_logs_are_the_same_file_with_the_same_link(tmp_path):
    warm, cold = _both(tmp_path, wt.say_wf, lambda _: {"word": "hi"}, "logs")
    assert warm == cold
    assert warm["log_uris"] == ["http://localhost:30080/logs/flytesnacks-development-logs/n0-0.log"]
    for mode in ("warm", "cold"):
        text = (tmp_path / mode / "home" / "logs" / "flytesnacks-development-logs" / "n0-0.log").read_text()
        assert "stdout says hi" in text and "stderr says hi" in text, f"{mode} log: {text!r}"


def test_a_forked_attempt_is_a_fresh_process_in_what_matters(tmp_path):
    results = {}
    for warm in (True, False):
        summary, _, ctx = _run(tmp_path, warm, wt.probe_twice_wf, {}, "probe")
        assert summary["phase"] == WorkflowStatusPhase.SUCCESS
        lm = ctx.blobs.read_proto(f"{ctx.blobs.execution_dir(h.P, h.D, 'probe')}/end-node/data/0/outputs.pb",
                                  literals_pb2.LiteralMap)
        results[warm] = [{k: v.scalar.primitive.string_value for k, v in lm.literals[o].map.literals.items()}
                         for o in ("o0", "o1")]
    same = ("session_leader", "attempt", "execution_id", "task_name", "marker", "cwd_is_work_dir", "cwd_on_path",
            "repo_on_path", "stdin_is_null", "argv")
    for warm_facts, cold_facts in zip(results[True], results[False], strict=True):
        assert {k: warm_facts[k] for k in same} == {k: cold_facts[k] for k in same}
        assert warm_facts["session_leader"] == "True" and warm_facts["stdin_is_null"] == "True"
        assert int(cold_facts["ppid"]) == os.getpid()  # cold: a child of the engine
        assert int(warm_facts["ppid"]) != os.getpid()  # warm: a child of the zygote
        # Temp files live in the attempt's own temp folder (removed with it), not in a shared /tmp.
        for facts in (warm_facts, cold_facts):
            assert facts["tempdir"].startswith(f"{tempfile.gettempdir()}/flytelite-")
            assert facts["user_tmp"].startswith(facts["tempdir"])
    a, b = results[True]
    # Children of one zygote must not draw the same "random" names (raw outputs would overwrite each other).
    assert a["flyte_random"] != b["flyte_random"] and a["random"] != b["random"]
    assert a["raw_output_prefix"] != b["raw_output_prefix"]


@pytest.mark.parametrize("warm", [True, False])
def test_attempts_run_in_engine_attempts_dir_and_their_folders_are_deleted_after_them(tmp_path, warm):
    attempts = tmp_path / "elsewhere" / "attempts"
    ctx, key, _, status, _ = run_workflow(tmp_path, wt.probe_twice_wf, {}, "probe", warm_workers=warm,
                                          attempts_dir=str(attempts))
    assert status.phase == WorkflowStatusPhase.SUCCESS
    lm = ctx.blobs.read_proto(f"{ctx.blobs.execution_dir(*key)}/end-node/data/0/outputs.pb", literals_pb2.LiteralMap)
    facts = [{k: v.scalar.primitive.string_value for k, v in lm.literals[output].map.literals.items()}
             for output in ("o0", "o1")]
    assert all(f["cwd"].startswith(f"{attempts}/") for f in facts)
    # Each its own, under the system's temp folder (a cold process's too, by TMPDIR), deleted after it.
    temp_dirs = {f["tempdir"] for f in facts}
    assert len(temp_dirs) == 2
    assert all(d.startswith(f"{tempfile.gettempdir()}/flytelite-") for d in temp_dirs)
    wait_for(lambda: not any(os.path.exists(d) for d in temp_dirs), "the attempts' temp folders to be deleted")
    # And the server's folder of them, once it stopped with none left.
    wait_for(lambda: not any(os.path.exists(os.path.dirname(d)) for d in temp_dirs),
             "the server's folder of temp folders to be deleted")
    # Deleted, or moved into the trash by the engine's stop (deleted after the next start; a pid file is moved
    # there as a file of its own). os.walk, not rglob: the cleaner thread deletes folders while the walk lists them.
    wait_for(lambda: not [name for folder, _, files in os.walk(attempts) for name in files
                          if not f"{folder}/".startswith(f"{attempts}/.trash/")],
             "the attempts' folders to be deleted once they ended")
    assert not list(ctx.config.work_dir.iterdir())  # nothing of the attempts in the home's work folder


def test_a_zygote_imports_flytekit_in_a_temp_folder_of_its_own_deleted_once_it_stopped(tmp_path):
    pool = WarmPool(tmp_path / "logs", temp_dir=str(tmp_path / "temp"))
    try:
        pool.prestart(PY)
        zygote = pool._current(PY)
        assert zygote is not None and zygote.temp_dir is not None
        assert Path(zygote.temp_dir).parent == tmp_path / "temp"
        # flytekit's import made its default context's folders there, not in the system's temp folder.
        assert [p.name for p in Path(zygote.temp_dir).iterdir()]
    finally:
        pool.close()
    assert not Path(zygote.temp_dir).exists()
    assert zygote.proc.poll() is not None


@pytest.mark.parametrize("warm", [True, False])
def test_a_task_starts_a_multiprocessing_manager_whatever_the_length_of_its_folders_paths(tmp_path, warm):
    """The Manager's unix socket (at most 107 bytes of path) goes two folders below the attempt's temp folder,
    which is short wherever the attempts' folders are."""
    attempts = tmp_path / ("deep" * 15) / "attempts"
    ctx, key, _, status, _ = run_workflow(tmp_path, wt.manager_wf, {"n": 3}, "manager", warm_workers=warm,
                                          attempts_dir=str(attempts))
    assert status.phase == WorkflowStatusPhase.SUCCESS, status.error
    assert h.outputs(ctx, key) == {"o0": 3}


def test_engine_attempts_dir_is_read_from_the_config_defaults_to_the_work_folder_and_must_be_absolute(tmp_path):
    path = tmp_path / "flytelite.yaml"
    path.write_text(f"home: {tmp_path / 'home'}\nengine:\n  attempts_dir: /dev/shm/flytelite\n")
    assert Config.load(path).attempts_dir == Path("/dev/shm/flytelite")
    assert Config(home=tmp_path).attempts_dir == tmp_path / "work"
    assert EngineConfig(attempts_dir="~/attempts").attempts_dir == os.path.expanduser("~/attempts")
    with pytest.raises(ValueError, match="engine.attempts_dir must be an absolute path, not 'attempts'"):
        EngineConfig(attempts_dir="attempts")


@pytest.mark.parametrize(("argv", "expected"), [
    ([PY, "-m", "flytekit.bin.entrypoint", "pyflyte-execute", "--inputs", "i"], ["pyflyte-execute", "--inputs", "i"]),
    ([PY, "-m", "flytekit.bin.entrypoint", "pyflyte-map-execute", "--inputs", "i"],
     ["pyflyte-map-execute", "--inputs", "i"]),
    ([PY, "-m", "flytekit.bin.entrypoint", "pyflyte-fast-execute", "--additional-distribution", "d", "--dest-dir",
      ".", "--", "pyflyte-execute", "--inputs", "i"],
     ["pyflyte-fast-execute", "--additional-distribution", "d", "--dest-dir", ".", "--", "pyflyte-execute",
      "--inputs", "i"]),
    # Inner commands that are not flytekit's entrypoint run as their own programs: cold.
    ([PY, "-m", "flytekit.bin.entrypoint", "pyflyte-fast-execute", "--", "my-tool", "x"], None),
    ([PY, "-m", "flytekit.bin.entrypoint", "pyflyte-fast-execute", "--additional-distribution", "d"], None),
    ([PY, "my_script.py"], None),
    (["/usr/bin/env", "bash", "-c", "echo"], None),
])
def test_which_commands_run_warm(argv, expected):
    assert pyflyte_command(argv) == expected


def _fast(code: str, command: str, inputs: str, out: str, *task: str) -> list[str]:
    """An attempt's command as the engine gives it: its code's tarball, its inputs, where it writes, its task."""
    return ["pyflyte-fast-execute", "--additional-distribution", code, "--dest-dir", f"{out}/code", "--", command,
            "--inputs", inputs, "--output-prefix", out, "--raw-output-data-prefix", f"{out}/raw", "--checkpoint-path",
            f"{out}/ck", "--prev-checkpoint", '""', "--resolver", "some.Resolver", "--", "task-name", *task]


def test_attempts_share_a_worker_group_across_tasks_and_executions_of_one_code_version_and_command():
    item = worker_group(_fast("code-1", "pyflyte-map-execute", "exec-a/n0/inputs.pb", "exec-a/n0/0", "double"))
    # Another item, of another map node and execution, of another task of the same code: the same group.
    assert worker_group(_fast("code-1", "pyflyte-map-execute", "exec-b/n3/inputs.pb", "exec-b/n3/7", "halve")) == item
    # Other code, or the other command (a task, not a map item): another group.
    assert worker_group(_fast("code-2", "pyflyte-map-execute", "exec-a/n0/inputs.pb", "exec-a/n0/0", "double")) != item
    task = worker_group(_fast("code-1", "pyflyte-execute", "exec-a/n1/inputs.pb", "exec-a/n1/0", "double"))
    assert task not in (None, item)
    assert worker_group(_fast("code-1", "pyflyte-execute", "exec-c/n2/inputs.pb", "exec-c/n2/1", "other")) == task
    assert worker_group(["pyflyte-fast-execute", "--additional-distribution", "code-1", "--", "my-tool"]) is None


@pytest.mark.parametrize(("env", "zygote_env", "alike"), [
    ({"A": "1", "PATH": "/x"}, {"A": "2"}, True),  # ordinary variables are the child's own
    ({"PYTHONPATH": "/code"}, {}, True),  # applied to sys.path in the child
    ({"PYTHONHASHSEED": "0"}, {}, False),  # read when the interpreter starts
    ({}, {"PYTHONOPTIMIZE": "1"}, False),
    ({"LD_PRELOAD": "/lib/x.so"}, {}, False),
    ({"FLYTE_SDK_RICH_TRACEBACKS": "0"}, {"FLYTE_SDK_RICH_TRACEBACKS": "0"}, True),
    ({"_F_RUNTIME_PACKAGES": "pandas"}, {}, False),  # pip installs before the task runs: cold only
])
def test_which_environments_run_warm(env, zygote_env, alike):
    assert starts_alike(env, zygote_env) == alike


def test_a_killed_zygote_orphans_its_attempt_which_is_still_waited_for_and_a_new_zygote_starts(tmp_path):
    marks = tmp_path / "marks"
    seen = {}

    async def kill_zygote_mid_task(ctx, key, engine):
        await h.wait_for(lambda: markers(marks, "sleep_then"))
        warm = engine.plugins.default.warm
        seen["zygote"] = warm.zygote_pid(PY)
        seen["pool"] = warm
        os.kill(seen["zygote"], signal.SIGKILL)

    ctx, key, sink, status, _ = run_workflow(tmp_path, ft.restart_wf, {"marker_dir": str(marks), "seconds": 3.0},
                                             "orphan", during=kill_zygote_mid_task)
    assert status.phase == WorkflowStatusPhase.SUCCESS, status.error
    assert h.outputs(ctx, key) == {"o0": 21}
    assert len(markers(marks, "sleep_then")) == 1  # waited for, not run again
    assert sink.task_phases("n1")[-1] == (0, "SUCCEEDED")
    assert _gone(seen["zygote"])
    assert seen["pool"].forks == 3  # the last task was forked too, by a new zygote


def test_an_environment_that_changes_interpreter_start_runs_cold(tmp_path):
    summary, forks, _ = _run(tmp_path, True, wt.probe_hashseed_wf, {}, "hashseed")
    assert summary["phase"] == WorkflowStatusPhase.SUCCESS
    assert forks == 0 and summary["outputs"] == {"o0": os.getpid()}  # a child of the engine, not of a zygote


def _ppid(pid: int) -> int:
    stat = (processes.PROC / str(pid) / "stat").read_text()
    return int(stat[stat.rindex(")") + 2:].split()[1])


def test_engine_stop_leaves_the_forked_attempt_running_and_a_new_engine_adopts_it(tmp_path):
    marks = tmp_path / "marks"
    ctx = h.make_context(tmp_path)
    key = h.create_execution(ctx, h.compile_entity(ft.restart_wf), {"marker_dir": str(marks), "seconds": 3.0},
                             "adopt")

    async def first_life():
        engine = Engine(ctx, h.RecordingSink())
        await engine.start()
        engine.notify(key)
        try:
            pid = await h.wait_for(lambda: h.running_pid(ctx, key, "n1"))
            await h.wait_for(lambda: markers(marks, "sleep_then"))
            zygote = engine.plugins.default.warm.zygote_pid(PY)
            assert _ppid(pid) == zygote
            return pid, zygote
        finally:
            await engine.stop()

    pid, zygote = asyncio.run(first_life())
    ctx.db.dispose()
    assert _gone(zygote), "the zygote must exit with the engine that started it"
    assert processes.start_time(pid) is not None, "the forked attempt must outlive its zygote"
    ctx, sink, status = _second_life(tmp_path, key)
    assert status.phase == WorkflowStatusPhase.SUCCESS and h.outputs(ctx, key) == {"o0": 21}
    assert len(markers(marks, "sleep_then")) == 1 and len(markers(marks, "last")) == 1
    assert sink.task_phases("n1") == [(0, "SUCCEEDED")]


def _too_slow_attempts(tmp_path, name: str):
    """(context, tctx(state, node): an attempt of too_slow_wf's task (60 s) as node `node`, marker folder)."""
    ctx = h.make_context(tmp_path)
    marks = tmp_path / "marks"
    closure = h.compile_entity(ft.too_slow_wf)
    inputs_uri = str(tmp_path / "inputs.pb")
    ctx.blobs.write_proto(inputs_uri, h.literal_map({"marker_dir": str(marks)}))
    spec = ExecutionSpec(project=h.P, domain=h.D, name=name, inputs_uri=inputs_uri,
                         raw_output_prefix=ctx.blobs.raw_output_prefix())

    def tctx(state, node="n0"):
        return TaskExecutionContext(
            ctx=ctx, key=(h.P, h.D, name), spec=spec, workflow_id=closure.primary.template.id, node_id=node,
            attempt=0, task=closure.tasks[0].template, input_uri=inputs_uri,
            output_prefix=str(tmp_path / node / "out"), state=state, wake=lambda delay: None)

    return ctx, tctx, marks


def test_the_pid_is_recorded_on_the_working_folder_or_else_in_a_pid_file_beside_it(tmp_path, monkeypatch):
    """The zygote records an attempt's process as an attribute of its working folder, which creates no file; on a
    file system without user attributes, in the pid file beside the folder. Either is found after a restart."""
    me = (os.getpid(), processes.start_time(os.getpid()))
    work_dir = tmp_path / "run" / "n0-0"
    work_dir.mkdir(parents=True)
    request = messages.Run(id=1, argv=[], env={}, cwd=str(work_dir), log="", tmp="", pid_file=pid_file(str(work_dir)),
                           bin_dir="")
    try:
        os.setxattr(tmp_path, "user.probe", b"1")
        attributes = True
    except OSError:
        attributes = False
    record_pid(request, *me)
    assert find_by_recorded_pid(str(work_dir)) == me
    assert Path(request.pid_file).exists() is not attributes
    if attributes:
        assert os.getxattr(work_dir, messages.PID_ATTRIBUTE) == f"{me[0]} {me[1]}\n".encode()

    def unsupported(*args):
        raise OSError(errno.ENOTSUP, "Operation not supported")

    other = tmp_path / "run" / "n1-0"
    other.mkdir()
    monkeypatch.setattr(os, "setxattr", unsupported)
    request = dataclasses.replace(request, cwd=str(other), pid_file=pid_file(str(other)))
    record_pid(request, *me)
    assert Path(request.pid_file).read_text() == f"{me[0]} {me[1]}\n"
    assert find_by_recorded_pid(str(other)) == me


def test_a_pid_file_is_found_beside_the_working_folder_and_where_an_older_flytelite_wrote_it(tmp_path):
    """An attempt running across an upgrade is found by the pid file the older server's zygote wrote."""
    me = f"{os.getpid()} {processes.start_time(os.getpid())}\n"
    work_dir = tmp_path / "run" / "n0-0"
    assert find_by_recorded_pid(str(work_dir)) is None
    (tmp_path / "run" / "n0-0.warm").mkdir(parents=True)
    (tmp_path / "run" / "n0-0.warm" / "pid").write_text(me)
    assert find_by_recorded_pid(str(work_dir)) == (os.getpid(), processes.start_time(os.getpid()))
    (tmp_path / "run" / "n0-0.pid").write_text(f"{os.getpid()} 1\n")  # another process's start: not alive
    assert find_by_recorded_pid(str(work_dir)) is None


def test_a_pid_file_found_half_written_is_read_once_its_line_is(tmp_path, monkeypatch):
    """The pid file is written in place: a reader that finds it without its line's end waits for the rest."""
    monkeypatch.setattr(pool, "PID_FILE_WRITE_SECONDS", 600.0)
    looked = threading.Event()

    def sleep(seconds: float) -> None:
        looked.set()
        time.sleep(seconds)

    monkeypatch.setattr(pool, "time", types.SimpleNamespace(monotonic=time.monotonic, sleep=sleep))
    work_dir = str(tmp_path / "run" / "n0-0")
    (tmp_path / "run").mkdir()
    Path(pid_file(work_dir)).write_text(str(os.getpid()))  # the line's start only
    found: list = []
    reader = threading.Thread(target=lambda: found.append(find_by_recorded_pid(work_dir)))
    reader.start()
    assert looked.wait(60)
    write_pid_file(pid_file(work_dir), os.getpid(), processes.start_time(os.getpid()))
    reader.join(60)
    assert found == [(os.getpid(), processes.start_time(os.getpid()))]
    # One that stays unfinished is no pid file.
    monkeypatch.setattr(pool, "PID_FILE_WRITE_SECONDS", 0.0)
    Path(pid_file(work_dir)).write_text(str(os.getpid()))
    assert find_by_recorded_pid(work_dir) is None


def test_a_fork_interrupted_by_a_crash_is_found_by_its_recorded_pid_not_started_twice(tmp_path):
    """The crash window between the zygote forking and the engine persisting the pid."""
    ctx, tctx, _ = _too_slow_attempts(tmp_path, "crashfork")

    first, second = LocalProcessPlugin(ctx), LocalProcessPlugin(ctx)
    try:
        state = {}
        # A local store: the attempt is prepared and sent to the zygote in one round, which does not wait for
        # the fork: the state persisted is "launching", without a pid.
        assert first.handle(tctx(state)).phase == PluginPhase.RUNNING
        assert state["status"] == "launching" and "pid" not in state
        assert first.warm.forks == 1
        asyncio.run(h.wait_for(lambda: find_by_recorded_pid(state["work_dir"]) is not None))
        pid = find_by_recorded_pid(state["work_dir"])[0]
        # A forked child's /proc environ is the zygote's: only its recorded pid says which attempt it is.
        assert processes.find_by_marker(state["marker"]) is None
        # What the crashed server persisted: the round that sent the attempt ("launching"), or nothing.
        persisted = dict(state)
        assert second.handle(tctx(persisted)).phase == PluginPhase.RUNNING  # found before starting one
        assert persisted["pid"] == pid and persisted["adopted"] is True
        after: dict = {}
        info = second.handle(tctx(after))  # a new server: the attempt's output folder is there already
        assert info.phase == PluginPhase.QUEUED and info.requeue_now and after["status"] == "launching"
        info = second.handle(tctx(after))  # it looks for the process before starting one
        assert info.phase == PluginPhase.RUNNING
        assert after["pid"] == pid and after["adopted"] is True
        assert second.warm is None or second.warm.forks == 0
        # An abort from a state persisted as "launching" finds it by its pid file as well.
        aborted = dict(state)
        second.abort(tctx(aborted))
        assert aborted["status"] == "aborted"
        assert _gone(pid)
    finally:
        first.close()
        second.close()


def _held_second_attempt(tmp_path):
    """A plugin whose zygote runs too_slow_wf's task (60 s) for node n0 and holds n1's attempt of it for n0's
    worker (a queue of one processor): (plugin, tctx(state, node), n0's state, n1's state, marker folder)."""
    ctx, tctx, marks = _too_slow_attempts(tmp_path, "held")
    plugin = LocalProcessPlugin(ctx)
    plugin.warm.queue_seconds, plugin.warm.processors, plugin.warm.short_seconds = 60.0, 1, 60.0  # before it starts
    first, second = {}, {}
    assert plugin.handle(tctx(first, "n0")).phase == PluginPhase.RUNNING
    asyncio.run(h.wait_for(lambda: markers(marks, "too_slow")))  # n0 runs in the group's only worker
    assert plugin.handle(tctx(second, "n1")).phase == PluginPhase.RUNNING  # sent: the zygote holds it
    assert second["status"] == "launching" and "pid" not in second
    return plugin, tctx, first, second, marks


def test_an_attempt_held_by_a_zygote_that_dies_fails_to_start_and_is_retried_while_the_started_one_runs_on(tmp_path):
    plugin, tctx, first, second, marks = _held_second_attempt(tmp_path)
    try:
        os.kill(plugin.warm.zygote_pid(PY), signal.SIGKILL)
        info = asyncio.run(h.wait_for(lambda: (i := plugin.handle(tctx(second, "n1"))).phase != PluginPhase.RUNNING
                                      and i))
        assert info.phase == PluginPhase.RETRYABLE_FAILURE and info.error.code == "ProcessStartFailed"
        assert "its zygote exited before it started the attempt" in info.error.message
        info = plugin.handle(tctx(first, "n0"))  # started before: waited for as an orphan
        assert info.phase == PluginPhase.RUNNING and processes.is_alive(first["pid"], first["start_time"])
        plugin.abort(tctx(first, "n0"))
        assert _gone(first["pid"])
        assert len(markers(marks, "too_slow")) == 1  # n1's attempt never ran
    finally:
        plugin.close()


def test_an_abort_drops_an_attempt_the_zygote_holds_and_it_never_runs(tmp_path):
    plugin, tctx, first, second, marks = _held_second_attempt(tmp_path)
    try:
        held = plugin._children[second["marker"]]
        plugin.abort(tctx(second, "n1"))
        assert second["status"] == "aborted"
        asyncio.run(h.wait_for(lambda: held.poll() is not None))
        assert held.returncode == -signal.SIGTERM and held.pid is None
        plugin.finalize(tctx(second, "n1"))
        assert plugin.handle(tctx(first, "n0")).phase == PluginPhase.RUNNING  # n0 runs on
        plugin.abort(tctx(first, "n0"))
        assert _gone(first["pid"])
        assert len(markers(marks, "too_slow")) == 1
    finally:
        plugin.close()


def test_an_attempt_waiting_behind_more_held_ones_than_processors_is_queued_until_it_starts(tmp_path):
    """As a pod waiting to be scheduled: QUEUED (a version after a wait for a pool slot's), then RUNNING."""
    plugin, tctx, first, second, marks = _held_second_attempt(tmp_path)
    try:
        third = {}
        info = plugin.handle(tctx(third, "n2"))  # two held for one processor: this one surely waits
        assert info.phase == PluginPhase.QUEUED and info.version == HELD_VERSION > ROOM_VERSION
        assert "waiting for a warm worker" in info.reason and third["status"] == "launching"
        assert plugin.handle(tctx(third, "n2")).phase == PluginPhase.QUEUED  # asked again before it starts
        for state, node in ((first, "n0"), (second, "n1")):  # their worker gone, the zygote starts the next one
            _abort_once_running(plugin, tctx(state, node), state)
        assert plugin.handle(tctx(third, "n2")).phase in (PluginPhase.QUEUED, PluginPhase.RUNNING)
        _abort_once_running(plugin, tctx(third, "n2"), third)
    finally:
        plugin.close()


def _abort_once_running(plugin, tctx, state: dict) -> None:
    """Wait until the attempt reports RUNNING with its pid, then abort it: its process is gone."""
    asyncio.run(h.wait_for(lambda: plugin.handle(tctx).phase == PluginPhase.RUNNING and "pid" in state))
    assert state["status"] == "running"
    plugin.abort(tctx)
    assert _gone(state["pid"])
