"""Durability: a new Engine on the same database finishes what a stopped one left, without re-running."""

from __future__ import annotations

import asyncio
import os
import signal
import sys

from flytelite.config import Config, EngineConfig
from flytelite.plugins.local.plugin import LocalProcessPlugin
from flytelite.plugins.machinery import processes
from flytelite.plugins.machinery.core import PluginPhase, TaskExecutionContext
from flytelite.propeller.engine import Engine
from flytelite.propeller.phases import NodeStatusPhase, WorkflowStatusPhase
from flytelite.server.app import build_context
from flytelite.testing import database_url_for
from tests.plugins.local.test_plugin import _gone, markers
from tests.propeller import flyte_tasks as ft
from tests.propeller import harness as h


def _start_then_stop(tmp_path, name: str, seconds: float):
    """Run restart_wf until its middle task's process runs, then stop the engine (the process keeps running)."""
    marks = tmp_path / "marks"
    ctx = h.make_context(tmp_path)
    key = h.create_execution(ctx, h.compile_entity(ft.restart_wf), {"marker_dir": str(marks), "seconds": seconds},
                             name)

    async def first_life():
        engine = Engine(ctx, h.RecordingSink())
        await engine.start()
        engine.notify(key)
        try:
            pid = await h.wait_for(lambda: h.running_pid(ctx, key, "n1"))
            await h.wait_for(lambda: markers(marks, "sleep_then"))  # the task itself is running
            return pid
        finally:
            await engine.stop()

    pid = asyncio.run(first_life())
    ctx.db.dispose()
    return marks, key, pid


def _second_life(tmp_path, key, machine: str = ""):
    """A new engine on the same database; `machine` names another machine it would run on."""
    ctx = build_context(Config(home=tmp_path / "home", database_url=database_url_for(tmp_path / "home"),
                               engine=EngineConfig(machine=machine)))
    sink = h.RecordingSink()

    async def go():
        engine = Engine(ctx, sink)
        await engine.start()  # queues every unfinished execution by itself
        try:
            await h.wait_for(lambda: h.load(ctx, key)[0].done, 90)
        finally:
            await engine.stop()

    asyncio.run(go())
    return ctx, sink, h.load(ctx, key)[1]


def test_restart_adopts_the_running_process_and_does_not_rerun_succeeded_nodes(tmp_path):
    marks, key, pid = _start_then_stop(tmp_path, "restart", seconds=3.0)
    assert processes.start_time(pid) is not None, "the task process must outlive the engine"
    ctx, sink, status = _second_life(tmp_path, key)
    assert status.phase == WorkflowStatusPhase.SUCCESS
    assert h.outputs(ctx, key) == {"o0": 21}
    assert len(markers(marks, "first")) == 1
    assert len(markers(marks, "sleep_then")) == 1  # waited for, not started again
    assert len(markers(marks, "last")) == 1
    assert sink.task_events("n0") == []
    assert sink.task_phases("n1") == [(0, "SUCCEEDED")]


def test_process_that_died_while_the_engine_was_down_is_retried_as_a_system_error(tmp_path):
    marks, key, pid = _start_then_stop(tmp_path, "lost", seconds=60.0)
    os.killpg(pid, signal.SIGKILL)
    assert _gone(pid)
    ctx, sink, status = _second_life(tmp_path, key)
    assert status.phase == WorkflowStatusPhase.SUCCESS
    assert h.outputs(ctx, key) == {"o0": 21}
    node = status.nodes["n1"]
    assert node.system_failures == 1 and node.attempts == 1
    failed = [e for e in sink.task_events("n1") if e.phase == 5][0]
    assert failed.retry_attempt == 0 and failed.error.code == "ProcessLost"
    assert len(markers(marks, "first")) == 1
    assert len(markers(marks, "sleep_then")) == 2


def test_a_replica_on_another_machine_retries_the_attempt_it_cannot_reach(tmp_path):
    """The process runs on, but on a machine the new engine is not on: the attempt ends as a system error
    and is retried there; the succeeded task does not run again."""
    marks, key, pid = _start_then_stop(tmp_path, "elsewhere", seconds=60.0)
    try:
        ctx, sink, status = _second_life(tmp_path, key, machine="another-machine")
        assert processes.start_time(pid) is not None, "another machine's process is left alone"
    finally:
        os.killpg(pid, signal.SIGKILL)
    assert status.phase == WorkflowStatusPhase.SUCCESS
    assert h.outputs(ctx, key) == {"o0": 21}
    assert status.nodes["n1"].system_failures == 1
    failed = [e for e in sink.task_events("n1") if e.phase == 5][0]
    assert failed.retry_attempt == 0 and failed.error.code == "ProcessLost"
    assert "cannot reach it" in failed.error.message
    # The retry ran under the new engine, on its machine (this sink is that engine's).
    assert sink.task_phases("n1")[-1] == (1, "SUCCEEDED")
    assert len(markers(marks, "first")) == 1
    assert len(markers(marks, "sleep_then")) == 2


def _attempt(ctx, tmp_path, name: str, state: dict, **kw) -> TaskExecutionContext:
    """Attempt 0 of add_then_square's first node in execution `name`, its plugin state `state`, its files in
    tmp_path."""
    closure = h.compile_entity(ft.add_then_square)
    return TaskExecutionContext(
        ctx=ctx, key=("flytesnacks", "development", name), spec=None, workflow_id=closure.primary.template.id,
        node_id="n0", attempt=0, task=closure.tasks[0].template, input_uri=str(tmp_path / "inputs.pb"),
        output_prefix=str(tmp_path / "out"), state=state, wake=lambda delay: None, **kw,
    )


def test_a_launch_interrupted_by_a_crash_is_adopted_not_started_twice(tmp_path):
    """The crash window between starting a process and persisting its pid."""
    ctx = build_context(Config(home=tmp_path / "home", database_url=database_url_for(tmp_path / "home")))
    marker = "flytesnacks-development-crash/n0/0"
    # The process a crashed server started just before dying: it carries the attempt's marker.
    env = dict(os.environ, **{processes.MARKER_ENV: marker})
    orphan = processes.spawn([sys.executable, "-c", "import time; time.sleep(30)"], env, str(tmp_path),
                             str(tmp_path / "orphan.log"))
    try:
        state = {"status": "launching", "marker": marker, "output_prefix": str(tmp_path / "out"),
                 "log_path": str(tmp_path / "n0-0.log"), "work_dir": str(tmp_path / "work")}
        plugin = LocalProcessPlugin(ctx)  # a new server: it did not prepare this attempt itself
        tctx = _attempt(ctx, tmp_path, "crash", state)
        info = plugin.handle(tctx)
        assert info.phase == PluginPhase.RUNNING
        assert state["pid"] == orphan.pid and state["adopted"] is True
        assert not (tmp_path / "n0-0.log").exists()  # nothing new was started
        # When it dies without results, that is a system error for the attempt.
        os.killpg(orphan.pid, signal.SIGKILL)
        orphan.wait()
        info = plugin.handle(tctx)
        assert info.phase == PluginPhase.RETRYABLE_FAILURE and info.error.code == "ProcessLost"
    finally:
        if orphan.poll() is None:
            orphan.kill()
            orphan.wait()


def _unpersisted_attempt(ctx, tmp_path, name: str) -> tuple[LocalProcessPlugin, TaskExecutionContext, dict]:
    """A new server's plugin handed an attempt whose state an earlier life never persisted (a local store:
    that life prepared and started it in one round, then died)."""
    state: dict = {}
    return LocalProcessPlugin(ctx), _attempt(ctx, tmp_path, name, state), state


def test_an_attempt_whose_working_folder_an_earlier_life_made_is_looked_for_not_started_again(tmp_path):
    """The crash window between starting a process in the round that prepared it and persisting that round:
    the attempt's working folder says it may have started."""
    ctx = build_context(Config(home=tmp_path / "home", database_url=database_url_for(tmp_path / "home")))
    marker = "flytesnacks-development-unpersisted/n0/0"
    work_dir = ctx.config.attempts_dir / "flytesnacks-development-unpersisted" / "n0-0"
    work_dir.mkdir(parents=True)
    orphan = processes.spawn([sys.executable, "-c", "import time; time.sleep(30)"],
                             dict(os.environ, **{processes.MARKER_ENV: marker}), str(work_dir),
                             str(tmp_path / "orphan.log"))
    try:
        plugin, tctx, state = _unpersisted_attempt(ctx, tmp_path, "unpersisted")
        info = plugin.handle(tctx)
        assert info.phase == PluginPhase.QUEUED and state["status"] == "launching" and "pid" not in state
        info = plugin.handle(tctx)
        assert info.phase == PluginPhase.RUNNING
        assert state["pid"] == orphan.pid and state["adopted"] is True
        assert not os.path.exists(state["log_path"])  # nothing new was started
    finally:
        orphan.kill()
        orphan.wait()


def test_an_attempt_whose_outputs_an_earlier_life_left_is_judged_by_them_without_its_working_folder(tmp_path):
    """Its working folder gone (as an attempts folder on a tmpfs is after a reboot), the outputs the process
    wrote before the crash finish the attempt: it does not run again."""
    ctx = build_context(Config(home=tmp_path / "home", database_url=database_url_for(tmp_path / "home")))
    (tmp_path / "out").mkdir()
    (tmp_path / "out" / "outputs.pb").write_bytes(b"")
    plugin, tctx, state = _unpersisted_attempt(ctx, tmp_path, "rebooted")
    assert plugin.handle(tctx).phase == PluginPhase.QUEUED
    assert plugin.handle(tctx).phase == PluginPhase.SUCCESS
    assert state["status"] == "done" and not os.path.exists(state["log_path"])
    assert not os.path.exists(state["work_dir"])


def test_a_replica_whose_lease_runs_out_starts_no_process(tmp_path):
    """A replica about to lose an execution's lease must not start a task process: the new owner, finding
    none by its marker, would start a second one."""
    ctx = build_context(Config(home=tmp_path / "home", database_url=database_url_for(tmp_path / "home")))
    state = {"status": "launching", "marker": "flytesnacks-development-late/n0/0",
             "output_prefix": str(tmp_path / "out"), "log_path": str(tmp_path / "n0-0.log"),
             "work_dir": str(tmp_path / "work")}
    tctx = _attempt(ctx, tmp_path, "late", state, may_launch=lambda: False)
    info = LocalProcessPlugin(ctx).handle(tctx)
    assert info.phase == PluginPhase.QUEUED and "renew its lease" in info.reason
    assert info.poll_after is not None
    assert state["status"] == "launching"
    assert not (tmp_path / "n0-0.log").exists() and not (tmp_path / "work").exists()


def test_node_status_records_what_finds_the_process_again(tmp_path):
    marks, key, pid = _start_then_stop(tmp_path, "recorded", seconds=1.0)
    ctx = build_context(Config(home=tmp_path / "home", database_url=database_url_for(tmp_path / "home")))
    node = h.load(ctx, key)[1].nodes["n1"]
    plugin_state = node.task.plugin
    assert plugin_state["pid"] == pid and plugin_state["start_time"] is not None
    assert plugin_state["output_prefix"].endswith("/n1/data/0")
    assert plugin_state["log_path"].endswith("n1-0.log")
    assert node.phase == NodeStatusPhase.RUNNING
    ctx.db.dispose()
    _second_life(tmp_path, key)
