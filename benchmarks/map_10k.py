"""A 10,000-item map task, timed (not part of the test suite).

    python -m benchmarks.map_10k [--items 10000] [--concurrency N] [--engine-only]

Default: a real flytelite server process and `pyflyte run --remote` of benchmarks/workflows/map_items.py,
each item a real task process; bounded by how fast this machine starts processes. Prints the time
from `pyflyte run` to SUCCEEDED, the execution's own duration and the array node's.

--engine-only: the same workflow registered with an in-process admin (real SQLite, blob folder,
event sink) and run by the engine with a no-op plugin that answers every task attempt at once:
what flytelite itself costs per item (issue 7's goal: 10,000 items in under 10 s).
"""

from __future__ import annotations

import argparse
import asyncio
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from collections import OrderedDict
from pathlib import Path

from flyteidl.admin import execution_pb2, launch_plan_pb2, node_execution_pb2, task_execution_pb2, task_pb2
from flyteidl.admin import workflow_pb2 as admin_workflow_pb2
from flyteidl.core import identifier_pb2, literals_pb2

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
    from flytekit import LaunchPlan
    from flytekit.configuration import ImageConfig, SerializationSettings
    from flytekit.core.context_manager import FlyteContextManager
    from flytekit.tools.translator import get_serializable

    from benchmarks.workflows.map_items import map_items_wf
    from flytelite.admin.events import EventSink
    from flytelite.admin.service import AdminService
    from flytelite.config import Config
    from flytelite.propeller.engine import Engine
    from flytelite.propeller.nodes.registry import default_handlers
    from flytelite.propeller.plugins.core import Plugin, PluginPhase, PluginPhaseInfo
    from flytelite.propeller.plugins.registry import PluginRegistry
    from flytelite.server.app import build_context
    from flytelite.store.models import FlyteWorkflow

    def integer(value: int) -> literals_pb2.Literal:
        return literals_pb2.Literal(scalar=literals_pb2.Scalar(primitive=literals_pb2.Primitive(integer=value)))

    class NoopPlugin(Plugin):
        """Answers every attempt at once with what the benchmark's tasks would return."""

        id = "benchmark-noop"
        task_types = ("python-task",)

        def handle(self, tctx) -> PluginPhaseInfo:
            inputs, name = tctx.inputs.literals, tctx.task.id.name
            if name.endswith("bench_items"):
                out = literals_pb2.Literal(collection=literals_pb2.LiteralCollection(
                    literals=[integer(i) for i in range(inputs["n"].scalar.primitive.integer)]))
            elif name.endswith("bench_total"):
                out = integer(sum(v.scalar.primitive.integer for v in inputs["values"].collection.literals))
            else:
                out = integer(inputs["x"].scalar.primitive.integer + 1)
            tctx.ctx.blobs.write_proto(f"{tctx.output_prefix}/outputs.pb", literals_pb2.LiteralMap(literals={"o0": out}))
            return PluginPhaseInfo(PluginPhase.SUCCESS)

    with tempfile.TemporaryDirectory() as tmp:
        ctx = build_context(Config(home=Path(tmp) / "home"))
        svc, sink = AdminService(ctx), EventSink(ctx)
        settings = SerializationSettings(image_config=ImageConfig.auto_default_image(), project=P, domain=D,
                                         version="v1")
        entities: OrderedDict = OrderedDict()
        get_serializable(entities, settings, map_items_wf)
        get_serializable(entities, settings, LaunchPlan.get_default_launch_plan(
            FlyteContextManager.current_context(), map_items_wf))
        for model in entities.values():
            pb = model.to_flyte_idl()
            if isinstance(pb, task_pb2.TaskSpec):
                svc.CreateTask(task_pb2.TaskCreateRequest(id=pb.template.id, spec=pb), None)
            elif isinstance(pb, admin_workflow_pb2.WorkflowSpec):
                svc.CreateWorkflow(admin_workflow_pb2.WorkflowCreateRequest(id=pb.template.id, spec=pb), None)
            elif isinstance(pb, launch_plan_pb2.LaunchPlan):
                lp_id = pb.id
                svc.CreateLaunchPlan(launch_plan_pb2.LaunchPlanCreateRequest(id=pb.id, spec=pb.spec), None)
        plugins = PluginRegistry([NoopPlugin()])
        engine = Engine(ctx, sink, plugins=plugins, handlers=default_handlers(plugins))
        ctx.notify_engine = engine.notify

        async def run() -> tuple[float, float, execution_pb2.Execution]:
            await engine.start()
            try:
                started, cpu = time.monotonic(), time.process_time()
                request = execution_pb2.ExecutionCreateRequest(
                    project=P, domain=D, spec=execution_pb2.ExecutionSpec(launch_plan=lp_id),
                    inputs=literals_pb2.LiteralMap(literals={"n": integer(items)}))
                exec_id = svc.CreateExecution(request, None).id
                key = (P, D, exec_id.name)
                while True:
                    with ctx.db.session() as s:
                        if s.get(FlyteWorkflow, key).done:
                            break
                    await asyncio.sleep(0.02)
                return time.monotonic() - started, time.process_time() - cpu, svc.GetExecution(
                    execution_pb2.WorkflowExecutionGetRequest(id=exec_id), None)
            finally:
                await engine.stop()

        elapsed, cpu, execution = asyncio.run(run())
        assert execution.closure.phase == 4, execution.closure.error
        node_id = identifier_pb2.NodeExecutionIdentifier(node_id="n1", execution_id=execution.id)
        array = svc.GetNodeExecution(node_execution_pb2.NodeExecutionGetRequest(id=node_id), None)
        tasks = svc.ListTaskExecutions(task_execution_pb2.TaskExecutionListRequest(node_execution_id=node_id,
                                                                                   limit=10), None)
        listed = len(tasks.task_executions[0].closure.metadata.external_resources)
        ctx.db.dispose()
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
