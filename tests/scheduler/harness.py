"""A real admin and store for scheduler tests: SQLite file, blob folder, AdminService in-process, a clock
that moves only when a test moves it, and the scheduler tests' launch plans registered through the API."""

from __future__ import annotations

from collections import OrderedDict
from datetime import datetime, timedelta, timezone

from flyteidl.admin import common_pb2, execution_pb2, launch_plan_pb2, task_pb2, workflow_pb2
from flyteidl.core import identifier_pb2 as idpb
from flyteidl.core import literals_pb2
from flytekit import LaunchPlan
from flytekit.configuration import ImageConfig, SerializationSettings
from flytekit.core.context_manager import FlyteContextManager
from flytekit.tools.translator import get_serializable

from flytelite.admin.service import AdminService
from flytelite.config import Config, SchedulerConfig
from flytelite.context import Context
from flytelite.idl.times import Clock
from flytelite.scheduler.launcher import admin_launcher
from flytelite.scheduler.scheduler import Scheduler
from flytelite.server.app import build_context
from flytelite.testing import database_url_for
from tests.scheduler import flows

P, D = "flytesnacks", "development"
T0 = datetime(2024, 5, 1, 12, 0, 0, tzinfo=timezone.utc)


class ManualClock(Clock):
    """Wall clock and monotonic clock that move together, only when the test says so."""

    def __init__(self, now: datetime):
        self.current = now
        self.elapsed = 0.0

    def now(self) -> datetime:
        return self.current

    def monotonic(self) -> float:
        return self.elapsed

    def advance(self, delta: timedelta) -> None:
        self.current += delta
        self.elapsed += delta.total_seconds()

    def set(self, when: datetime) -> None:
        self.advance(when - self.current)


class Harness:
    def __init__(self, home, clock: ManualClock | None = None):
        self.ctx: Context = build_context(Config(home=home, database_url=database_url_for(home)))
        self.clock = self.ctx.clock = clock or ManualClock(T0)
        self.ctx.notify_engine = lambda key: None
        self.svc = AdminService(self.ctx)

    def close(self) -> None:
        self.ctx.db.dispose()

    def scheduler(self, catchup: str = "all", launcher=None) -> Scheduler:
        return Scheduler(self.ctx, launcher or admin_launcher(self.ctx), SchedulerConfig(catchup=catchup))

    # -- registration and activation through the API ---------------------------------------------------
    def register(self, launch_plan: LaunchPlan, version: str = "v1") -> idpb.Identifier:
        settings = SerializationSettings(image_config=ImageConfig.auto_default_image(), project=P, domain=D,
                                         version=version)
        entities: OrderedDict = OrderedDict()
        get_serializable(entities, settings, launch_plan)
        default = LaunchPlan.get_default_launch_plan(FlyteContextManager.current_context(), launch_plan.workflow)
        get_serializable(entities, settings, default)
        for model in entities.values():
            pb = model.to_flyte_idl()
            if isinstance(pb, task_pb2.TaskSpec):
                self.svc.CreateTask(task_pb2.TaskCreateRequest(id=pb.template.id, spec=pb), None)
            elif isinstance(pb, workflow_pb2.WorkflowSpec):
                self.svc.CreateWorkflow(workflow_pb2.WorkflowCreateRequest(id=pb.template.id, spec=pb), None)
            elif isinstance(pb, launch_plan_pb2.LaunchPlan):
                self.svc.CreateLaunchPlan(launch_plan_pb2.LaunchPlanCreateRequest(id=pb.id, spec=pb.spec), None)
        return lp_id(launch_plan.name, version)

    def set_state(self, ident: idpb.Identifier, state: int) -> None:
        self.svc.UpdateLaunchPlan(launch_plan_pb2.LaunchPlanUpdateRequest(id=ident, state=state), None)

    def activate(self, ident: idpb.Identifier) -> None:
        self.set_state(ident, launch_plan_pb2.ACTIVE)

    def deactivate(self, ident: idpb.Identifier) -> None:
        self.set_state(ident, launch_plan_pb2.INACTIVE)

    # -- reading executions back through the API -------------------------------------------------------
    def executions(self, launch_plan: str | None = None) -> list[execution_pb2.Execution]:
        request = common_pb2.ResourceListRequest(id=common_pb2.NamedEntityIdentifier(project=P, domain=D),
                                                 limit=1000)
        if launch_plan:
            request.filters = f"eq(launch_plan.name,{launch_plan})"
        return list(self.svc.ListExecutions(request, None).executions)

    def scheduled_times(self, launch_plan: str | None = None, version: str | None = None) -> list[datetime]:
        return sorted(e.spec.metadata.scheduled_at.ToDatetime(tzinfo=timezone.utc)
                      for e in self.executions(launch_plan)
                      if version is None or e.spec.launch_plan.version == version)

    def inputs(self, execution: execution_pb2.Execution) -> literals_pb2.LiteralMap:
        data = self.svc.GetExecutionData(execution_pb2.WorkflowExecutionGetDataRequest(id=execution.id), None)
        return data.full_inputs


def lp_id(name: str, version: str = "v1") -> idpb.Identifier:
    return idpb.Identifier(resource_type=idpb.LAUNCH_PLAN, project=P, domain=D, name=name, version=version)


def run_for(harness: Harness, schedulers: list[Scheduler], duration: timedelta,
            step: timedelta = timedelta(seconds=20)) -> None:
    """Move the clock forward in steps, every scheduler ticking after each step."""
    end = harness.clock.now() + duration
    while harness.clock.now() < end:
        harness.clock.advance(min(step, end - harness.clock.now()))
        for scheduler in schedulers:
            scheduler.tick()


def minutes(n: float) -> timedelta:
    return timedelta(minutes=n)


__all__ = ["P", "D", "T0", "Harness", "ManualClock", "flows", "lp_id", "minutes", "run_for"]
