"""A 10,000-item map task, timed (not part of the test suite).

    python -m benchmarks.map_10k [--items 10000] [--concurrency N] [--engine-only]

Default: a real flytelite server process and `pyflyte run --remote` of benchmarks/workflows/map_items.py,
each item a real task process; bounded by how fast this machine starts processes. Prints the time
from `pyflyte run` to SUCCEEDED, the execution's own duration and the array node's.

--engine-only: a map task (benchmarks/workflows/engine_wfs.py) registered with an in-process admin (real
SQLite, blob folder, event sink) and run by the engine with the no-op plugin, which answers every task
attempt at once: what flytelite itself costs per item (issue 7's goal: 10,000 items in under 10 s).
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from flyteidl.admin import execution_pb2, node_execution_pb2, task_execution_pb2
from flyteidl.core import identifier_pb2

from flytelite.testing import make_server

HERE = Path(__file__).parent
PYFLYTE = str(Path(sys.executable).parent / "pyflyte")
URL = re.compile(r"/executions/([a-z0-9]+)")
P, D = "flytesnacks", "development"


def through_server(items: int) -> None:
    from flytekit.configuration import Config as FlyteConfig
    from flytekit.models.core.identifier import NodeExecutionIdentifier
    from flytekit.remote import FlyteRemote

    with tempfile.TemporaryDirectory() as tmp:
        server = make_server(Path(tmp))
        server.start()
        try:
            folder = Path(tmp) / "wf"
            folder.mkdir()
            shutil.copy(HERE / "workflows" / "map_items.py", folder)
            remote = FlyteRemote(FlyteConfig.auto(str(server.config_path)), default_project=P, default_domain=D)
            started = time.monotonic()
            out = subprocess.run([PYFLYTE, "--config", str(server.config_path), "run", "--remote", "map_items.py",
                                  "map_items_wf", "--n", str(items)],
                                 cwd=folder, env=server.client_env(), capture_output=True, text=True, check=True)
            name = URL.search(out.stdout + out.stderr).group(1)
            while not (execution := remote.fetch_execution(name=name)).is_done:
                time.sleep(0.2)
            wall = time.monotonic() - started
            assert execution.closure.phase == 4, execution.closure.error
            assert execution.outputs["o0"] == items * (items + 1) // 2
            array = remote.client.get_node_execution(NodeExecutionIdentifier(node_id="n1", execution_id=execution.id))
        finally:
            server.stop()
    execution_s = (execution.closure.updated_at - execution.closure.created_at).total_seconds()
    array_s = array.closure.duration.total_seconds()
    print(f"{items} items through a real server, real task processes (max parallelism 25):")
    print(f"  pyflyte run --remote to SUCCEEDED: {wall:.1f} s")
    print(f"  execution created to SUCCEEDED:    {execution_s:.1f} s")
    print(f"  array node running:                {array_s:.1f} s ({items / max(array_s, 1e-9):.0f} items/s)")


def engine_only(items: int) -> None:
    from benchmarks.common import integers, register
    from benchmarks.engine_only import EngineBench
    from benchmarks.workflows.engine_wfs import map_wf

    with tempfile.TemporaryDirectory() as tmp, EngineBench(Path(tmp) / "home") as bench:
        lp_id = register(bench.admin, map_wf)
        cpu = time.process_time()
        elapsed, _ = bench.run(lp_id, {"xs": integers(list(range(items)))})
        cpu = time.process_time() - cpu
        execution = bench.svc.GetExecution(execution_pb2.WorkflowExecutionGetRequest(
            id=identifier_pb2.WorkflowExecutionIdentifier(project=P, domain=D, name=bench.last_name)))
        node_id = identifier_pb2.NodeExecutionIdentifier(node_id="n0", execution_id=execution.id)
        array = bench.svc.GetNodeExecution(node_execution_pb2.NodeExecutionGetRequest(id=node_id))
        tasks = bench.svc.ListTaskExecutions(task_execution_pb2.TaskExecutionListRequest(node_execution_id=node_id,
                                                                                         limit=10))
        listed = len(tasks.task_executions[0].closure.metadata.external_resources)
    array_s = array.closure.duration.ToTimedelta().total_seconds()
    print(f"{items} items, engine only (in-process admin, no-op plugin, SQLite, blob folder):")
    print(f"  execution created to done: {elapsed:.2f} s (CPU time of this process: {cpu:.2f} s)")
    print(f"  array node running:        {array_s:.2f} s ({items / max(array_s, 1e-9):.0f} items/s)")
    print(f"  items admin lists:         {listed}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--items", type=int, default=10_000)
    parser.add_argument("--concurrency", type=int, default=0, help="the map task's concurrency (0: unset)")
    parser.add_argument("--engine-only", action="store_true")
    args = parser.parse_args()
    if args.concurrency:
        os.environ["MAP_BENCH_CONCURRENCY"] = str(args.concurrency)
    if args.engine_only:
        engine_only(args.items)
    else:
        through_server(args.items)


if __name__ == "__main__":
    main()
