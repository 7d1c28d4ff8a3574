"""Engine test harness: a real Context (SQLite file, blob folder), flytekit-serialized workflows compiled
by flytelite's compiler, FlyteWorkflow rows created as admin creates them, and a recording event sink."""

from __future__ import annotations

import asyncio
import threading
import time
from collections import OrderedDict
from pathlib import Path

from flyteidl.admin import task_pb2, workflow_pb2
from flyteidl.core import compiler_pb2, execution_pb2, literals_pb2
from flytekit.configuration import ImageConfig, SerializationSettings
from flytekit.tools.translator import get_serializable

from flytelite.compiler import compile_workflow
from flytelite.config import Config, EngineConfig
from flytelite.context import Context
from flytelite.idl.phases import node_phase_name, task_phase_name, workflow_phase_name
from flytelite.propeller.status import WorkflowStatus
from flytelite.server.app import build_context
from flytelite.store.flyteworkflow import ExecutionSpec
from flytelite.store.models import FlyteWorkflow
from flytelite.testing import database_url_for

REPO = Path(__file__).resolve().parents[2]
P, D = "flytesnacks", "development"


class RecordingSink:
    """A real event sink that keeps every event it is given (stands in for admin's)."""

    def __init__(self) -> None:
        self.events: list = []
        self._lock = threading.Lock()

    def workflow_event(self, event) -> None:
        with self._lock:
            self.events.append(event)

    node_event = task_event = workflow_event

    def workflow_phases(self) -> list[str]:
        return [workflow_phase_name(e.phase) for e in self.events if e.DESCRIPTOR.name == "WorkflowExecutionEvent"]

    def node_events(self, node_id: str) -> list:
        return [e for e in self.events if e.DESCRIPTOR.name == "NodeExecutionEvent" and e.id.node_id == node_id]

    def node_phases(self, node_id: str) -> list[str]:
        return [node_phase_name(e.phase) for e in self.node_events(node_id)]

    def task_events(self, node_id: str) -> list:
        return [e for e in self.events
                if e.DESCRIPTOR.name == "TaskExecutionEvent" and e.parent_node_execution_id.node_id == node_id]

    def task_phases(self, node_id: str) -> list[tuple[int, str]]:
        return [(e.retry_attempt, task_phase_name(e.phase)) for e in self.task_events(node_id)]


def make_context(tmp_path: Path, **engine) -> Context:
    config = Config(home=tmp_path / "home", database_url=database_url_for(tmp_path / "home"), engine=EngineConfig(**{"resync_seconds": 30.0, **engine}))
    return build_context(config)


def serialize(entity, version: str = "v1") -> tuple[workflow_pb2.WorkflowSpec, list]:
    """The WorkflowSpec and TaskTemplates flytekit registers for a workflow (non-fast registration)."""
    settings = SerializationSettings(
        image_config=ImageConfig.auto_default_image(), project=P, domain=D, version=version,
        env={"PYTHONPATH": str(REPO)},
    )
    entities: OrderedDict = OrderedDict()
    get_serializable(entities, settings, entity)
    wf, tasks = None, []
    for model in entities.values():
        pb = model.to_flyte_idl()
        if isinstance(pb, task_pb2.TaskSpec):
            tasks.append(pb.template)
        elif isinstance(pb, workflow_pb2.WorkflowSpec):
            wf = pb
    return wf, tasks


def compile_entity(entity, retype: dict[str, str] | None = None) -> compiler_pb2.CompiledWorkflowClosure:
    """Compile a flytekit workflow; retype maps short task names to a replacement task type."""
    wf, tasks = serialize(entity)
    for t in tasks:
        short = t.id.name.rsplit(".", 1)[-1]
        if retype and short in retype:
            t.type = retype[short]
    return compile_workflow(wf.template, list(wf.sub_workflows), [compiler_pb2.CompiledTask(template=t) for t in tasks], [])


def literal(value) -> literals_pb2.Literal:
    if isinstance(value, literals_pb2.Literal):
        return value
    if isinstance(value, list):
        return literals_pb2.Literal(collection=literals_pb2.LiteralCollection(literals=[literal(v) for v in value]))
    if isinstance(value, bool):
        p = literals_pb2.Primitive(boolean=value)
    elif isinstance(value, int):
        p = literals_pb2.Primitive(integer=value)
    elif isinstance(value, float):
        p = literals_pb2.Primitive(float_value=value)
    else:
        p = literals_pb2.Primitive(string_value=str(value))
    return literals_pb2.Literal(scalar=literals_pb2.Scalar(primitive=p))


def literal_map(values: dict) -> literals_pb2.LiteralMap:
    return literals_pb2.LiteralMap(literals={k: literal(v) for k, v in values.items()})


def python_value(lit: literals_pb2.Literal):
    if lit.HasField("collection"):
        return [python_value(v) for v in lit.collection.literals]
    if not lit.scalar.HasField("primitive"):
        return lit
    p = lit.scalar.primitive
    return getattr(p, p.WhichOneof("value"))


def create_execution(ctx: Context, closure, inputs: dict, name: str, **spec_fields) -> tuple[str, str, str]:
    """Create the FlyteWorkflow row as admin's CreateExecution does."""
    exec_dir = ctx.blobs.execution_dir(P, D, name)
    inputs_uri = f"{exec_dir}/inputs.pb"
    ctx.blobs.write_proto(inputs_uri, literal_map(inputs))
    spec = ExecutionSpec(project=P, domain=D, name=name, inputs_uri=inputs_uri,
                         raw_output_prefix=ctx.blobs.raw_output_prefix(), **spec_fields)
    now = ctx.clock.now()
    with ctx.db.session() as s:
        s.add(FlyteWorkflow(project=P, domain=D, name=name, closure_pb=closure.SerializeToString(),
                            spec_json=spec.to_json(), status_json="{}", abort_cause=None, done=False,
                            created_at=now, updated_at=now))
    return (P, D, name)


def load(ctx: Context, key) -> tuple[FlyteWorkflow, WorkflowStatus]:
    with ctx.db.session() as s:
        row = s.get(FlyteWorkflow, key)
        return row, WorkflowStatus.from_json(row.status_json)


def outputs(ctx: Context, key) -> dict:
    path = f"{ctx.blobs.execution_dir(*key)}/end-node/data/0/outputs.pb"
    lm = ctx.blobs.read_proto(path, literals_pb2.LiteralMap)
    return {k: python_value(v) for k, v in lm.literals.items()}


async def wait_for(predicate, timeout: float = 60.0, interval: float = 0.02):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = await asyncio.get_running_loop().run_in_executor(None, predicate)
        if value:
            return value
        await asyncio.sleep(interval)
    raise AssertionError(f"condition not met within {timeout}s")


def running_pid(ctx: Context, key, node_id: str) -> int | None:
    """The pid of the node's task process while its attempt runs (a done node keeps no plugin state)."""
    node = load(ctx, key)[1].nodes.get(node_id)
    if node and node.task and node.task.plugin.get("status") == "running":
        return node.task.plugin["pid"]
    return None


async def run_to_completion(engine, ctx: Context, key, timeout: float = 90.0) -> WorkflowStatus:
    engine.notify(key)
    await wait_for(lambda: load(ctx, key)[0].done, timeout)
    return load(ctx, key)[1]


def workflow_error(sink: RecordingSink) -> execution_pb2.ExecutionError:
    return [e for e in sink.events if e.DESCRIPTOR.name == "WorkflowExecutionEvent" and e.HasField("error")][-1].error
