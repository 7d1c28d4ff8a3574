"""A real admin for execution tests: a Context over a SQLite file and a blob folder, an AdminService whose
RPC methods are called in-process, the EventSink, and flytekit entities registered through the API."""

from __future__ import annotations

from collections import OrderedDict
from datetime import datetime, timedelta, timezone

from flyteidl.admin import execution_pb2, launch_plan_pb2, task_pb2, workflow_pb2
from flyteidl.core import execution_pb2 as core_exec
from flyteidl.core import identifier_pb2 as idpb
from flyteidl.core import literals_pb2
from flyteidl.event import event_pb2
from flytekit import LaunchPlan, task, workflow
from flytekit.configuration import ImageConfig, SerializationSettings
from flytekit.core.context_manager import FlyteContextManager
from flytekit.core.workflow import WorkflowBase
from flytekit.tools.translator import get_serializable

from flytelite.admin.events import EventSink
from flytelite.admin.service import AdminService
from flytelite.config import Config
from flytelite.idl.times import Clock, to_timestamp
from flytelite.server.app import admin_clients, build_context
from flytelite.testing import database_url_for

P, D = "flytesnacks", "development"
T0 = datetime(2024, 5, 1, 12, 0, 0, tzinfo=timezone.utc)


@task
def double(x: int) -> int:
    return x * 2


@task
def greet(name: str) -> str:
    return f"hello {name}"


@workflow
def pipeline(x: int = 3) -> int:
    return double(x=double(x=x))


@workflow
def add_wf(a: int, b: str) -> str:
    return greet(name=b)


pipeline_fixed = LaunchPlan.get_or_create(pipeline, name="pipeline_fixed", fixed_inputs={"x": 4})


def register(svc: AdminService, entity, version: str = "v1", edit=None) -> None:
    """Register `entity` (with its tasks, subworkflows and launch plans) through `svc` as pyflyte does;
    `edit(spec, specs)` may change each WorkflowSpec before it is sent (specs: every serialized entity)."""
    settings = SerializationSettings(image_config=ImageConfig.auto_default_image(), project=P, domain=D,
                                     version=version)
    entities: OrderedDict = OrderedDict()
    get_serializable(entities, settings, entity)
    if isinstance(entity, WorkflowBase):
        default = LaunchPlan.get_default_launch_plan(FlyteContextManager.current_context(), entity)
        get_serializable(entities, settings, default)
    specs = [model.to_flyte_idl() for model in entities.values()]
    for pb in specs:
        if edit is not None and isinstance(pb, workflow_pb2.WorkflowSpec):
            edit(pb, specs)
        if isinstance(pb, task_pb2.TaskSpec):
            svc.CreateTask(task_pb2.TaskCreateRequest(id=pb.template.id, spec=pb), None)
        elif isinstance(pb, workflow_pb2.WorkflowSpec):
            svc.CreateWorkflow(workflow_pb2.WorkflowCreateRequest(id=pb.template.id, spec=pb), None)
        elif isinstance(pb, launch_plan_pb2.LaunchPlan):
            svc.CreateLaunchPlan(launch_plan_pb2.LaunchPlanCreateRequest(id=pb.id, spec=pb.spec), None)


class ManualClock(Clock):
    """A clock that stands still until a test moves it."""

    def __init__(self, now: datetime):
        self.current = now

    def now(self) -> datetime:
        return self.current


class Harness:
    def __init__(self, tmp_path):
        self.ctx = build_context(Config(home=tmp_path / "home", database_url=database_url_for(tmp_path / "home")))
        # Executions are created a minute before the events' times (T0 + seconds).
        self.clock = self.ctx.clock = ManualClock(T0 - timedelta(minutes=1))
        self.notified: list[tuple[str, str, str]] = []
        self.ctx.notify_engine = self.notified.append
        self.svc = AdminService(self.ctx)
        self.sink = EventSink(self.ctx)
        # What an engine built on this admin is given (flytelite.propeller.clients).
        self.clients = admin_clients(self.ctx)

    def close(self) -> None:
        self.ctx.db.dispose()

    # -- registration through the API, as pyflyte register does ---------------------------------------
    def register(self, entity, version: str = "v1", edit=None) -> None:
        register(self.svc, entity, version, edit)

    def register_all(self) -> None:
        for entity in (pipeline, add_wf, pipeline_fixed):
            self.register(entity)

    # -- executions ----------------------------------------------------------------------------------
    def create(self, lp_name: str, inputs: dict | None = None, name: str = "", version: str = "v1",
               resource_type: int = idpb.LAUNCH_PLAN, **spec_fields) -> idpb.WorkflowExecutionIdentifier:
        spec_fields.setdefault("metadata", execution_pb2.ExecutionMetadata(
            mode=execution_pb2.ExecutionMetadata.MANUAL, principal="placeholder"))
        spec = execution_pb2.ExecutionSpec(
            launch_plan=idpb.Identifier(resource_type=resource_type, project=P, domain=D, name=lp_name,
                                        version=version),
            **spec_fields,
        )
        request = execution_pb2.ExecutionCreateRequest(project=P, domain=D, name=name, spec=spec,
                                                       inputs=literal_map(inputs or {}))
        return self.svc.CreateExecution(request).id

    def get(self, exec_id) -> execution_pb2.Execution:
        return self.svc.GetExecution(execution_pb2.WorkflowExecutionGetRequest(id=exec_id))

    # -- events as propeller sends them --------------------------------------------------------------
    def workflow_event(self, exec_id, phase, at: float, **fields) -> None:
        self.sink.workflow_event(event_pb2.WorkflowExecutionEvent(
            execution_id=exec_id, phase=phase, occurred_at=ts(at), producer_id="propeller", **fields))

    def node_event(self, exec_id, node_id: str, phase, at: float, parent: str = "", **fields) -> None:
        event = event_pb2.NodeExecutionEvent(
            id=idpb.NodeExecutionIdentifier(execution_id=exec_id, node_id=node_id), phase=phase,
            occurred_at=ts(at), producer_id="propeller", spec_node_id=fields.pop("spec_node_id", node_id),
            event_version=2, **fields)
        if parent:
            event.parent_node_metadata.node_id = parent
        self.sink.node_event(event)

    def task_event(self, exec_id, node_id: str, task_name: str, attempt: int, phase, at: float,
                   **fields) -> None:
        self.sink.task_event(event_pb2.TaskExecutionEvent(
            task_id=idpb.Identifier(resource_type=idpb.TASK, project=P, domain=D, name=task_name, version="v1"),
            parent_node_execution_id=idpb.NodeExecutionIdentifier(execution_id=exec_id, node_id=node_id),
            retry_attempt=attempt, phase=phase, occurred_at=ts(at), producer_id="propeller", **fields))

    def write_literals(self, path: str, values: dict) -> str:
        self.ctx.blobs.write_proto(path, literal_map(values))
        return path


WF = core_exec.WorkflowExecution.Phase
NODE = core_exec.NodeExecution.Phase
TASK = core_exec.TaskExecution.Phase


def ts(seconds_after_t0: float):
    return to_timestamp(T0 + timedelta(seconds=seconds_after_t0))


def literal(value) -> literals_pb2.Literal:
    if isinstance(value, literals_pb2.Literal):
        return value
    if isinstance(value, bool):
        return literals_pb2.Literal(scalar=literals_pb2.Scalar(primitive=literals_pb2.Primitive(boolean=value)))
    if isinstance(value, int):
        return literals_pb2.Literal(scalar=literals_pb2.Scalar(primitive=literals_pb2.Primitive(integer=value)))
    if isinstance(value, float):
        return literals_pb2.Literal(scalar=literals_pb2.Scalar(primitive=literals_pb2.Primitive(float_value=value)))
    if isinstance(value, list):
        return literals_pb2.Literal(collection=literals_pb2.LiteralCollection(literals=[literal(v) for v in value]))
    return literals_pb2.Literal(scalar=literals_pb2.Scalar(primitive=literals_pb2.Primitive(string_value=value)))


def literal_map(values: dict) -> literals_pb2.LiteralMap:
    return literals_pb2.LiteralMap(literals={k: literal(v) for k, v in values.items()})


def values_of(literal_map_pb: literals_pb2.LiteralMap) -> dict:
    return {name: value_of(lit) for name, lit in literal_map_pb.literals.items()}


def value_of(lit: literals_pb2.Literal):
    """A primitive's value, a list of values, or None."""
    if lit.HasField("collection"):
        return [value_of(item) for item in lit.collection.literals]
    if lit.scalar.HasField("none_type"):
        return None
    prim = lit.scalar.primitive
    return getattr(prim, prim.WhichOneof("value"))
