"""What the benchmark sections share: a measured row, medians, and registering flytekit entities over admin's API."""

from __future__ import annotations

import statistics
import tempfile
import time
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TypeVar

from flyteidl.admin import launch_plan_pb2, task_pb2
from flyteidl.admin import workflow_pb2 as admin_workflow_pb2
from flyteidl.core import identifier_pb2, literals_pb2

P, D = "flytesnacks", "development"


@dataclass
class Row:
    """One line of the results table: a median of `runs` measurements against a goal."""

    name: str
    values: list[float]
    unit: str  # "s", "ms", "/s" or "MiB"
    goal: str = ""
    # True/False when the goal is a bound on the median; None when the row has no goal.
    met: bool | None = None
    baselines: list[str] = field(default_factory=list)
    note: str = ""

    @property
    def median(self) -> float:
        return statistics.median(self.values)

    @property
    def runs(self) -> int:
        return len(self.values)

    def check(self, op: str, bound: float) -> Row:
        """Judge the median against the goal: op is "<", "<=" or ">="."""
        value = self.median
        self.met = {"<": value < bound, "<=": value <= bound, ">=": value >= bound}[op]
        return self


def fmt(value: float, unit: str) -> str:
    if unit == "ms":  # two decimals below 10 ms: a median just over a goal such as 2 ms shows how far over
        return (f"{value * 1000:.2f} ms" if value < 0.01 else f"{value * 1000:,.1f} ms" if value < 0.1
                else f"{value * 1000:,.0f} ms")
    if unit == "s":
        return f"{value:,.2f} s"
    if unit == "/s":
        return f"{value:,.0f} /s"
    if unit == "MiB":
        return f"{value:,.0f} MiB"
    return f"{value:g} {unit}"


def baseline(label: str, values: list[float], unit: str, note: str = "") -> str:
    """A baseline cell: its median, how many runs it took, and anything a reader must know."""
    median = statistics.median(values)
    extra = f", {note}" if note else ""
    return f"{label}: {fmt(median, unit)} ({len(values)} run{'s' if len(values) != 1 else ''}{extra})"


T = TypeVar("T")
TMPFS = Path("/dev/shm")
TMPFS_BASELINE = "flytelite, home on tmpfs"


def on_tmpfs(measure: Callable[[Path], T]) -> T | None:
    """`measure` given an empty folder on tmpfs (/dev/shm), removed afterwards; None where there is none.
    Measured again there, a row shows what creating and deleting flytelite's files costs on the disk."""
    if not TMPFS.is_dir():
        return None
    with tempfile.TemporaryDirectory(prefix="flytelite-bench-", dir=TMPFS) as tmp:
        return measure(Path(tmp))


def timed(fn: Callable[[], object]) -> float:
    started = time.perf_counter()
    fn()
    return time.perf_counter() - started


def integer(value: int) -> literals_pb2.Literal:
    return literals_pb2.Literal(scalar=literals_pb2.Scalar(primitive=literals_pb2.Primitive(integer=value)))


def integers(values: list[int]) -> literals_pb2.Literal:
    return literals_pb2.Literal(collection=literals_pb2.LiteralCollection(literals=[integer(v) for v in values]))


def register(admin, workflow, version: str = "v1") -> identifier_pb2.Identifier:
    """Register a flytekit workflow, its tasks and its default launch plan; the launch plan's id.

    `admin` is an AdminService (in-process) or an AdminServiceStub (gRPC): both take a request first.
    """
    from flytekit import LaunchPlan
    from flytekit.configuration import ImageConfig, SerializationSettings
    from flytekit.core.context_manager import FlyteContextManager
    from flytekit.tools.translator import get_serializable

    settings = SerializationSettings(image_config=ImageConfig.auto_default_image(), project=P, domain=D,
                                     version=version)
    entities: OrderedDict = OrderedDict()
    get_serializable(entities, settings, workflow)
    get_serializable(entities, settings, LaunchPlan.get_default_launch_plan(
        FlyteContextManager.current_context(), workflow))
    lp_id = None
    for model in entities.values():
        pb = model.to_flyte_idl()
        if isinstance(pb, task_pb2.TaskSpec):
            admin.CreateTask(task_pb2.TaskCreateRequest(id=pb.template.id, spec=pb))
        elif isinstance(pb, admin_workflow_pb2.WorkflowSpec):
            admin.CreateWorkflow(admin_workflow_pb2.WorkflowCreateRequest(id=pb.template.id, spec=pb))
        elif isinstance(pb, launch_plan_pb2.LaunchPlan):
            admin.CreateLaunchPlan(launch_plan_pb2.LaunchPlanCreateRequest(id=pb.id, spec=pb.spec))
            lp_id = pb.id
    assert lp_id is not None, "flytekit serialized no launch plan"
    return lp_id
