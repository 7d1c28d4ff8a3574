"""Warm workers follow their task environment: a package installed or removed since a zygote started gets the
next attempt a new zygote; the old one drains (its running attempts end as they would, its idle workers end)."""

from __future__ import annotations

import asyncio
import os
import time

from flyteidl.core import literals_pb2

from flytelite.plugins.local.workers.environment import EnvironmentSnapshot, mtime_ns
from flytelite.plugins.local.workers.pool import WarmPool
from flytelite.plugins.machinery import processes
from tests.plugins.local.test_plugin import _gone
from tests.propeller import harness as h
from tests.propeller.task_envs import TaskEnv, editable_wheel, make_task_env, pip_install


def _launch(pool: WarmPool, env: TaskEnv, folder, task_name: str, inputs: dict, group: str | None = None):
    """Fork a task of tests/propeller/env_tasks.py run by the environment's interpreter."""
    folder.mkdir(parents=True)
    inputs_pb = folder / "inputs.pb"
    inputs_pb.write_bytes(h.literal_map(inputs).SerializeToString())
    argv = [str(env.python), "-m", "flytekit.bin.entrypoint", "pyflyte-execute", "--inputs", str(inputs_pb),
            "--output-prefix", str(folder / "out"), "--raw-output-data-prefix", str(folder / "raw"), "--resolver",
            "flytekit.core.python_auto_container.default_task_resolver", "--", "task-module",
            "tests.propeller.env_tasks", "task-name", task_name]
    (folder / "work").mkdir()
    attempt = pool.launch(argv, dict(os.environ, PYTHONPATH=str(h.REPO)), str(folder / "work"), str(folder / "log"),
                          str(folder / "tmp"), group=group)
    assert attempt is not None, "the attempt must run warm"
    return attempt


def _ended(attempt) -> int:
    asyncio.run(h.wait_for(lambda: attempt.poll() is not None, timeout=120))
    return attempt.returncode


def _output(folder) -> str | None:
    path = folder / "out" / "outputs.pb"
    if not path.exists():
        return None
    return literals_pb2.LiteralMap.FromString(path.read_bytes()).literals["o0"].scalar.primitive.string_value


def test_an_install_gets_the_next_attempt_a_new_zygote_while_the_old_one_finishes_what_it_runs(tmp_path, capsys):
    env = make_task_env(tmp_path / "env")
    pool = WarmPool(tmp_path / "logs", worker_idle_seconds=300.0)
    try:
        # In the first zygote: an idle map-item worker, a running attempt, and an import that fails.
        item = _launch(pool, env, tmp_path / "item", "wait_for_file", {"path": str(tmp_path)}, group="siblings")
        assert _ended(item) == 0
        release = tmp_path / "release"
        running = _launch(pool, env, tmp_path / "running", "wait_for_file", {"path": str(release)})
        old = running.zygote
        assert item.zygote is old and processes.is_alive(item.pid, item.start_time)
        _ended(_launch(pool, env, tmp_path / "missing", "module_value", {"module": "env_probe"}))
        assert (tmp_path / "missing" / "out" / "error.pb").exists()
        assert "No module named 'env_probe'" in (tmp_path / "missing" / "log").read_text()

        checks = 20_000
        started = time.perf_counter()
        for _ in range(checks):
            assert old.stale() is None
        per_check_us = (time.perf_counter() - started) / checks * 1e6

        pip_install(env, editable_wheel(tmp_path / "probe", "env_probe", "probe v1"))
        assert old.stale() == str(env.site_packages)

        after = _launch(pool, env, tmp_path / "after", "module_value", {"module": "env_probe"})
        assert after.zygote is not old and old.draining
        assert _ended(after) == 0 and _output(tmp_path / "after") == "probe v1"
        assert pool.zygote_pid(str(env.python)) == after.zygote.proc.pid
        # The old zygote's idle worker ends; its running attempt runs on, and its exit is still reported.
        asyncio.run(h.wait_for(lambda: _gone(item.pid), timeout=60))
        assert running.poll() is None and processes.is_alive(running.pid, running.start_time)
        assert old.alive and old.proc.poll() is None
        release.touch()
        assert _ended(running) == 0 and not running.orphaned
        assert _output(tmp_path / "running") == str(release)
        # With nothing left to run, the drained zygote exits on its own.
        asyncio.run(h.wait_for(lambda: old.proc.poll() is not None, timeout=60))
        assert old.proc.returncode == 0
    finally:
        pool.close()
    with capsys.disabled():
        print(f"\n[warm environment] stale check ({len(old.environment.watched)} paths): {per_check_us:.1f} µs")
    assert per_check_us < 1000


def test_a_snapshot_sees_a_package_added_a_user_site_created_and_a_change_at_the_zygotes_start(tmp_path):
    site, user, flytekit_file = tmp_path / "site-packages", tmp_path / "user-site", tmp_path / "flytekit.py"
    site.mkdir()
    flytekit_file.write_text("")
    past = time.time_ns() - 10_000_000_000
    os.utime(site, ns=(past, past))

    def snapshot() -> EnvironmentSnapshot:
        return EnvironmentSnapshot.from_ready({str(site): mtime_ns(str(site)), str(user): mtime_ns(str(user))},
                                              str(flytekit_file), spawned_ns=time.time_ns())

    first = snapshot()
    assert first.changed() is None and first.racy is None
    (site / "pkg-0.1.dist-info").mkdir()
    assert first.changed() == str(site)
    # A folder changed as the zygote started may have changed again after it looked (same clock tick).
    assert snapshot().racy == str(site)
    os.utime(site, ns=(past, past))
    second = snapshot()
    assert second.changed() is None
    user.mkdir()  # the user site exists now: a new interpreter puts it on sys.path
    assert second.changed() == str(user)
