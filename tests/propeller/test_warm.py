"""Warm workers: every scenario run warm (forked from a zygote) and cold (a new interpreter) gives the same result.

Each parity test runs one real flytekit workflow through the real engine twice, switching only
`engine.warm_workers`, and compares what admin would see: phases, outputs, errors, retries.
"""

from __future__ import annotations

import asyncio
import os
import re
import signal
import sys

import pytest
from flyteidl.core import literals_pb2

from flytelite.config import Config, EngineConfig
from flytelite.propeller.engine import Engine
from flytelite.propeller.phases import WorkflowPhase
from flytelite.propeller.plugins import processes
from flytelite.propeller.plugins.core import PluginPhase, TaskExecutionContext
from flytelite.propeller.plugins.local_process import LocalProcessPlugin
from flytelite.propeller.plugins.warm.pool import WarmPool, pyflyte_command, starts_alike
from flytelite.store.flyteworkflow import ExecutionSpec
from flytelite.store.models import FlyteWorkflow
from tests.propeller import flyte_tasks as ft
from tests.propeller import harness as h
from tests.propeller import warm_tasks as wt
from tests.propeller.test_local_process import _gone, markers, run_workflow
from tests.propeller.test_restart import _running_pid, _second_life

PY = sys.executable


def _run(tmp_path, warm: bool, entity, inputs: dict, name: str, during=None):
    """Run one workflow; the summary admin would see, and how many attempts were forked."""
    seen = {}

    async def hook(ctx, key, engine):
        seen["plugin"] = engine.plugins.get("python-task")
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
    if status.phase == WorkflowPhase.SUCCESS:
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
    # A cold process on a loaded machine may be killed before it even marks itself; a forked one starts at once.
    assert markers(tmp_path / "warm" / "marks", "too_slow")
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
    assert warm["phase"] == WorkflowPhase.ABORTED and warm["tasks"]["n0"][-1] == (0, "ABORTED")
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
        assert summary["phase"] == WorkflowPhase.SUCCESS
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
        # Temp files live in the attempt's own scratch folder (removed with it), not in a shared /tmp.
        assert warm_facts["tempdir"].startswith(str(tmp_path / "warm" / "home" / "work"))
        assert warm_facts["user_tmp"].startswith(warm_facts["tempdir"])
    a, b = results[True]
    # Children of one zygote must not draw the same "random" names (raw outputs would overwrite each other).
    assert a["flyte_random"] != b["flyte_random"] and a["random"] != b["random"]
    assert a["raw_output_prefix"] != b["raw_output_prefix"]


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
        warm = engine.plugins.get("python-task").warm
        seen["zygote"] = warm.zygote_pid(PY)
        seen["pool"] = warm
        os.kill(seen["zygote"], signal.SIGKILL)

    ctx, key, sink, status, _ = run_workflow(tmp_path, ft.restart_wf, {"marker_dir": str(marks), "seconds": 3.0},
                                             "orphan", during=kill_zygote_mid_task)
    assert status.phase == WorkflowPhase.SUCCESS, status.error
    assert h.outputs(ctx, key) == {"o0": 21}
    assert len(markers(marks, "sleep_then")) == 1  # waited for, not run again
    assert sink.task_phases("n1")[-1] == (0, "SUCCEEDED")
    assert _gone(seen["zygote"])
    assert seen["pool"].forks == 3  # the last task was forked too, by a new zygote


def test_an_environment_that_changes_interpreter_start_runs_cold(tmp_path):
    summary, forks, _ = _run(tmp_path, True, wt.probe_hashseed_wf, {}, "hashseed")
    assert summary["phase"] == WorkflowPhase.SUCCESS
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
            pid = await h.wait_for(lambda: _running_pid(ctx, key, "n1"))
            await h.wait_for(lambda: markers(marks, "sleep_then"))
            zygote = engine.plugins.get("python-task").warm.zygote_pid(PY)
            assert _ppid(pid) == zygote
            return pid, zygote
        finally:
            await engine.stop()

    pid, zygote = asyncio.run(first_life())
    ctx.db.dispose()
    assert _gone(zygote), "the zygote must exit with the engine that started it"
    assert processes.start_time(pid) is not None, "the forked attempt must outlive its zygote"
    ctx, sink, status = _second_life(tmp_path, key)
    assert status.phase == WorkflowPhase.SUCCESS and h.outputs(ctx, key) == {"o0": 21}
    assert len(markers(marks, "sleep_then")) == 1 and len(markers(marks, "last")) == 1
    assert sink.task_phases("n1") == [(0, "SUCCEEDED")]


def test_a_fork_interrupted_by_a_crash_is_found_by_its_pid_file_not_started_twice(tmp_path):
    """The crash window between the zygote forking and the engine persisting the pid."""
    ctx = h.make_context(tmp_path)
    marks = tmp_path / "marks"
    closure = h.compile_entity(ft.too_slow_wf)
    inputs_uri = str(tmp_path / "inputs.pb")
    ctx.blobs.write_proto(inputs_uri, h.literal_map({"marker_dir": str(marks)}))
    spec = ExecutionSpec(project=h.P, domain=h.D, name="crashfork", inputs_uri=inputs_uri,
                         raw_output_prefix=ctx.blobs.raw_output_prefix())

    def tctx(state):
        return TaskExecutionContext(
            ctx=ctx, key=(h.P, h.D, "crashfork"), spec=spec, workflow_id=closure.primary.template.id, node_id="n0",
            attempt=0, task=closure.tasks[0].template, input_uri=inputs_uri, output_prefix=str(tmp_path / "out"),
            state=state, wake=lambda delay: None)

    first, second = LocalProcessPlugin(ctx), LocalProcessPlugin(ctx)
    try:
        state = {}
        assert first.handle(tctx(state)).phase == PluginPhase.QUEUED
        persisted = dict(state)  # what the crashed server had written: "launching", no pid
        assert first.handle(tctx(state)).phase == PluginPhase.RUNNING
        pid = state["pid"]
        assert first.warm.forks == 1
        # A forked child's /proc environ is the zygote's: only its pid file says which attempt it is.
        assert processes.find_by_marker(persisted["marker"]) is None
        after = dict(persisted)
        info = second.handle(tctx(after))  # a new server, which did not prepare this attempt
        assert info.phase == PluginPhase.RUNNING
        assert after["pid"] == pid and after["adopted"] is True
        assert second.warm is None or second.warm.forks == 0
        second.abort(tctx(after))
        assert _gone(pid)
    finally:
        first.close()
        second.close()


# -- map items: one worker runs sibling items one after another ----------------------------------------
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
    assert warm["phase"] == WorkflowPhase.SUCCESS and forks == len(xs)
    assert warm_items[3] is None and cold_items[3] is None  # the failed item, allowed by min_success_ratio
    for x, (w, c) in enumerate(zip(warm_items, cold_items, strict=True)):
        if x == 3:
            continue
        assert {k: w[k] for k in ITEM_FACTS} == {k: c[k] for k in ITEM_FACTS}
        # What an item did to its module, environment and folder is not seen by the next one in its worker.
        assert (w["x"], w["index"], w["seen"], w["env_left_before"], w["cwd_was_clean"]) == (
            str(x), str(x), str(x), "", "True")
        assert w["tempdir"].startswith(str(tmp_path / "warm" / "home" / "work"))
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


def test_an_item_that_leaves_a_thread_or_an_atexit_hook_ends_as_a_process_would(tmp_path):
    marks = tmp_path / "marks"
    marks.mkdir()
    summary, forks, ctx = _run(tmp_path, True, wt.lingering_wf, {"xs": [0, 1, 2], "marker_dir": str(marks)},
                               "linger")
    assert summary["phase"] == WorkflowPhase.SUCCESS, summary
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
        first = pool.launch(argv, dict(os.environ, PYTHONPATH=str(h.REPO)), cwd, log, group="siblings")
        asyncio.run(h.wait_for(lambda: _exited(first)))
        assert first.returncode == 0 and not first.reused
        argv, cwd, log = _item_request(tmp_path, "b", "nap", {"seconds": 1.5})
        second = pool.launch(argv, dict(os.environ, PYTHONPATH=str(h.REPO)), cwd, log, group="siblings")
        assert second.reused and second.pid == first.pid
        assert first.kill(signal.SIGTERM) is True  # nothing to kill any more: no signal sent
        # Even a kill naming the pid (sent before the first item's exit was heard) must not reach the second.
        first.zygote.send({"op": "kill", "pid": first.pid, "id": first.request_id, "sig": int(signal.SIGTERM)})
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
        first = pool.launch(argv, dict(os.environ, PYTHONPATH=str(h.REPO)), cwd, log, group="siblings")
        asyncio.run(h.wait_for(lambda: _exited(first)))
        argv, cwd, log = _item_request(tmp_path, "b", "nap", {"seconds": 30.0})
        second = pool.launch(argv, dict(os.environ, PYTHONPATH=str(h.REPO)), cwd, log, group="siblings")
        assert second.reused
        assert second.kill(signal.SIGTERM) is True
        asyncio.run(h.wait_for(lambda: _exited(second)))
        assert second.returncode == -signal.SIGTERM
        assert not (tmp_path / "b" / "out" / "outputs.pb").exists()
    finally:
        pool.close()


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
            return engine.plugins.get("python-task").warm
        finally:
            await engine.stop()

    warm = asyncio.run(first_life())
    ctx.db.dispose()
    (_, first_pid), (_, worker) = ran()
    assert worker == first_pid and warm.reused == 1, "item 1 must run in the worker that ran item 0"
    assert processes.start_time(worker) is not None, "the worker must finish its item without its engine"
    ctx, sink, status = _second_life(tmp_path, key)
    assert status.phase == WorkflowPhase.SUCCESS, status.error
    assert h.outputs(ctx, key) == {"o0": [0, 10, 20]}
    assert [x for x, _ in ran()] == [0, 1, 2], "no item runs twice"
    assert _gone(worker), "the worker ends after its item once its zygote is gone"


def _spans(marks) -> list[tuple[float, float]]:
    return sorted(tuple(map(float, line.split())) for line in markers(marks, "spans"))


def _one_at_a_time(spans: list[tuple[float, float]]) -> bool:
    return all(end <= next_start for (_, end), (next_start, _) in zip(spans, spans[1:], strict=False))


def test_warm_pool_size_is_read_from_the_config_and_cannot_be_negative(tmp_path):
    path = tmp_path / "flytelite.yaml"
    path.write_text("engine:\n  warm_pool_size: 3\n")
    assert Config.load(path).engine.warm_pool_size == 3
    assert Config().engine.warm_pool_size == 0  # no limit by default
    with pytest.raises(ValueError, match="warm_pool_size must be 0 \\(no limit\\) or more, not -1"):
        EngineConfig(warm_pool_size=-1)


def test_with_a_pool_of_one_warm_attempts_wait_for_the_slot_in_queued(tmp_path):
    marks = tmp_path / "marks"
    marks.mkdir()
    ctx, key, sink, status, _ = run_workflow(tmp_path / "tasks", wt.two_timed_wf, {"marker_dir": str(marks)},
                                             "pool1", warm_pool_size=1)
    assert status.phase == WorkflowPhase.SUCCESS, status.error
    assert h.outputs(ctx, key) == {"o0": 1, "o1": 2}
    assert len(_spans(marks)) == 2 and _one_at_a_time(_spans(marks)), _spans(marks)
    reasons = [e.reason for node in ("n0", "n1") for e in sink.task_events(node)]
    assert any("waiting for a warm worker: all 1 (engine.warm_pool_size) run tasks" in r for r in reasons), reasons

    # A map task's items share the slot too (one worker runs them one after another).
    (marks / "spans").unlink()
    ctx, key, sink, status, _ = run_workflow(tmp_path / "map", wt.timed_items_wf,
                                             {"xs": [0, 1, 2], "marker_dir": str(marks)}, "pool1map",
                                             warm_pool_size=1)
    assert status.phase == WorkflowPhase.SUCCESS, status.error
    assert h.outputs(ctx, key) == {"o0": [0, 1, 2]}
    assert len(_spans(marks)) == 3 and _one_at_a_time(_spans(marks)), _spans(marks)


def test_an_item_whose_import_registers_a_type_transformer_ends_its_worker(tmp_path):
    """Importing the module again in the same process would fail ('already registered'): no reuse."""
    from tests.propeller import warm_registering as wr

    pids = tmp_path / "pids"
    pids.mkdir()
    summary, forks, ctx = _run(tmp_path, True, wr.thirds_wf, {"xs": [1, 2, 3], "pids_dir": str(pids)}, "thirds")
    assert summary["phase"] == WorkflowPhase.SUCCESS, summary
    assert summary["outputs"]["o0"] == ["1/3", "2/3", "1"]
    assert len(set(markers(pids, "pids"))) == 3, "each item in a process of its own"
