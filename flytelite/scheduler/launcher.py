"""The scheduler's production launcher: admin's CreateExecution, in process, with mode SCHEDULED.

It sends what Flyte's scheduler sends FlyteAdmin: the launch plan version, the
deterministic execution name, metadata (mode SCHEDULED, scheduled_at) and the
kickoff time input. Unlike Flyte (cron schedules only) the kickoff input is also
set for fixed-rate schedules: Flyte lets such a plan register with the kickoff
input unbound and then cannot launch it.
"""

from __future__ import annotations

from flyteidl.admin import execution_pb2
from flyteidl.core import identifier_pb2 as idpb
from flyteidl.core import literals_pb2

from flytelite.context import Context
from flytelite.idl.times import to_timestamp
from flytelite.scheduler.scheduler import Launcher, ScheduledLaunch


def scheduled_execution_request(launch: ScheduledLaunch) -> execution_pb2.ExecutionCreateRequest:
    """The CreateExecution request for one slot."""
    lp = launch.launch_plan
    inputs = literals_pb2.LiteralMap()
    if launch.kickoff_input:
        inputs.literals[launch.kickoff_input].scalar.primitive.datetime.CopyFrom(to_timestamp(launch.scheduled_at))
    spec = execution_pb2.ExecutionSpec(
        launch_plan=idpb.Identifier(resource_type=idpb.LAUNCH_PLAN, project=lp.project, domain=lp.domain,
                                    name=lp.name, version=lp.version),
        metadata=execution_pb2.ExecutionMetadata(mode=execution_pb2.ExecutionMetadata.SCHEDULED,
                                                 scheduled_at=to_timestamp(launch.scheduled_at)),
    )
    return execution_pb2.ExecutionCreateRequest(project=lp.project, domain=lp.domain, name=launch.execution_name,
                                                spec=spec, inputs=inputs)


def admin_launcher(ctx: Context) -> Launcher:
    """Launch through AdminService.CreateExecution (raises flytelite.errors.AlreadyExists for a launched slot)."""
    from flytelite.admin.service import AdminService

    service = AdminService(ctx)

    def launch(scheduled: ScheduledLaunch) -> idpb.WorkflowExecutionIdentifier:
        return service.CreateExecution(scheduled_execution_request(scheduled), None).id

    return launch
