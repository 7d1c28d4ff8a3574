"""`make bench`: end-to-end figures measured against a real flytelite server process.

Rows (medians of several runs, one machine, one run of this script):
- hello world: wall time from `pyflyte run --remote` starting to the execution SUCCEEDED;
- per-task overhead: a 5-task chain's execution time per task minus the bare task process
  time (the same `pyflyte-fast-execute ... pyflyte-execute ...` command run directly);
- cache hit: a 1-node cached workflow run again with the same input (no task process starts):
  its node's QUEUED to SUCCEEDED time, and the execution's created to SUCCEEDED time.
Writes benchmarks/results/latest.md.
"""

from __future__ import annotations

import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from flyteidl.core import catalog_pb2
from flytekit.configuration import Config as FlyteConfig
from flytekit.remote import FlyteRemote

from flytelite.testing import make_server

HERE = Path(__file__).parent
PYFLYTE = str(Path(sys.executable).parent / "pyflyte")
URL = re.compile(r"/executions/([a-z0-9]+)")
RUNS = 5


def run_remote(server, folder: Path, file: str, wf: str) -> tuple[str, float]:
    """Start `pyflyte run --remote`; return the execution name and the monotonic start time."""
    started = time.monotonic()
    out = subprocess.run([PYFLYTE, "--config", str(server.config_path), "run", "--remote", file, wf],
                         cwd=folder, env=server.client_env(), capture_output=True, text=True, check=True)
    return URL.search(out.stdout + out.stderr).group(1), started


def wait_succeeded(remote: FlyteRemote, name: str):
    while True:
        execution = remote.fetch_execution(name=name)
        if execution.is_done:
            assert execution.closure.phase == 4, execution.closure.error
            return execution, time.monotonic()
        time.sleep(0.02)


def bare_process_seconds(server, remote, name: str) -> float:
    """Run the chain's first task command directly, as the engine would, and time it."""
    execution = remote.sync_execution(remote.fetch_execution(name=name), sync_nodes=True)
    node = execution.node_executions["n0"]
    task = remote.fetch_task(name=node.task_executions[0].id.task_id.name,
                             version=node.task_executions[0].id.task_id.version)
    args = list(task.template.container.args)
    with tempfile.TemporaryDirectory() as tmp:
        values = {"input": node.input_uri.replace("file://", ""), "outputprefix": f"{tmp}/out",
                  "rawoutputdataprefix": f"{tmp}/raw", "checkpointoutputprefix": f"{tmp}/ckpt",
                  "prevcheckpointprefix": ""}

        def fill(arg: str) -> str:
            return re.sub(r"\{\{\s*[.$](\w+)\s*\}\}", lambda m: values[m.group(1).lower()], arg)

        cmd = [fill(a) for a in args]
        dest = cmd[cmd.index("--dest-dir") + 1]
        Path(dest).mkdir(parents=True, exist_ok=True)
        cmd[0] = str(Path(sys.executable).parent / cmd[0])
        env = dict(os.environ, PATH=f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}")
        started = time.monotonic()
        subprocess.run(cmd, cwd=tmp, check=True, capture_output=True, env=env)
        elapsed = time.monotonic() - started
        assert Path(f"{tmp}/out/outputs.pb").exists()
        return elapsed


def cache_hit_seconds(server, remote: FlyteRemote, folder: Path) -> tuple[list[float], list[float]]:
    """Node QUEUED->SUCCEEDED and execution created->SUCCEEDED times of cache-hit runs (one miss first)."""
    name, _ = run_remote(server, folder, "cached.py", "cached_wf")
    first, _ = wait_succeeded(remote, name)
    lp = remote.fetch_launch_plan(name=first.spec.launch_plan.name, version=first.spec.launch_plan.version)
    node_s, execution_s = [], []
    for _ in range(RUNS):
        execution, _ = wait_succeeded(remote, remote.execute(lp, inputs={"x": 0}).id.name)
        execution = remote.sync_execution(execution, sync_nodes=True)
        node = execution.node_executions["n0"]
        assert node.closure.task_node_metadata.cache_status == catalog_pb2.CACHE_HIT, "expected a cache hit"
        node_s.append((node.closure.updated_at - node.closure.created_at).total_seconds())
        execution_s.append((execution.closure.updated_at - execution.closure.created_at).total_seconds())
    return node_s, execution_s


def main() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        server = make_server(Path(tmp))
        server.start()
        try:
            folder = Path(tmp) / "wf"
            shutil.copytree(HERE / "workflows", folder)
            remote = FlyteRemote(FlyteConfig.auto(str(server.config_path)), default_project="flytesnacks",
                                 default_domain="development")
            hello = []
            for _ in range(RUNS):
                name, started = run_remote(server, folder, "hello.py", "hello_wf")
                _, done = wait_succeeded(remote, name)
                hello.append(done - started)
            per_task, bare = [], []
            for _ in range(RUNS):
                name, _ = run_remote(server, folder, "chain.py", "chain5")
                execution, _ = wait_succeeded(remote, name)
                seconds = (execution.closure.updated_at - execution.closure.created_at).total_seconds()
                per_task.append(seconds / 5)
                bare.append(bare_process_seconds(server, remote, name))
            hit_node, hit_execution = cache_hit_seconds(server, remote, folder)
        finally:
            server.stop()
    hello_s, task_s, bare_s, hit_node_s, hit_exec_s = (
        statistics.median(v) for v in (hello, per_task, bare, hit_node, hit_execution))
    table = (
        "| figure | median | runs |\n| --- | --- | --- |\n"
        f"| hello world: `pyflyte run --remote` to SUCCEEDED | {hello_s:.2f} s | {RUNS} |\n"
        f"| 5-task chain: execution time per task | {task_s * 1000:.0f} ms | {RUNS} |\n"
        f"| bare task process (`pyflyte-fast-execute … pyflyte-execute`) | {bare_s * 1000:.0f} ms | {RUNS} |\n"
        f"| flytelite overhead per task (chain per task minus bare process) | {(task_s - bare_s) * 1000:.0f} ms"
        f" | {RUNS} |\n"
        f"| cache hit: node QUEUED to SUCCEEDED (no task process) | {hit_node_s * 1000:.1f} ms | {RUNS} |\n"
        f"| cache hit: 1-node execution created to SUCCEEDED | {hit_exec_s * 1000:.0f} ms | {RUNS} |\n"
    )
    out = HERE / "results" / "latest.md"
    out.write_text("# flytelite benchmarks\n\n" + table)
    print(table)


if __name__ == "__main__":
    main()
