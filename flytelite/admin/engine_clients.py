"""Admin's side of the engine's seams: what flytelite.propeller.clients asks, answered in-process.

FlytePropeller reaches FlyteAdmin over gRPC (launchplan/admin.go's adminLaunchPlanExecutor,
recovery.NewClient, the SignalServiceClient); here the same calls go straight to admin's functions
in the caller's thread. Each class satisfies one Protocol the engine owns; the composition root
(flytelite.server.app) hands them to the engine. Admin never imports the engine for this: the
Protocols are structural.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from flyteidl.admin import (
    common_pb2,
    execution_pb2,
    launch_plan_pb2,
    node_execution_pb2,
    signal_pb2,
    task_pb2,
)
from flyteidl.core import identifier_pb2, literals_pb2
from google.protobuf import wrappers_pb2

from flytelite import errors
from flytelite.admin.executions import recover_execution, terminate_execution
from flytelite.admin.launch import launch_execution
from flytelite.admin.signals import get_or_create_signal
from flytelite.context import Context
from flytelite.idl.enums import as_enum
from flytelite.idl.phases import WorkflowPhase
from flytelite.store import entities
from flytelite.store import executions as repo

if TYPE_CHECKING:
    from flytelite.propeller.clients.launchplan import LaunchContext

log = logging.getLogger(__name__)


class AdminLaunchPlanExecutor:
    """launchplan.Executor and Reader over admin's launch path (FlytePropeller's adminLaunchPlanExecutor)."""

    def __init__(self, ctx: Context):
        self.ctx = ctx

    def launch(self, launch_ctx: LaunchContext, execution_id: identifier_pb2.WorkflowExecutionIdentifier,
               launch_plan: identifier_pb2.Identifier, inputs: literals_pb2.LiteralMap) -> None:
        if launch_ctx.recovery_execution is not None:
            try:
                recover_execution(self.ctx, launch_ctx.recovery_execution, execution_id.name,
                                  launch_ctx.parent_node_execution)
                return
            except errors.NotFound:
                log.warning("cannot recover child execution %s of node %s; launching it afresh",
                            launch_ctx.recovery_execution.name, launch_ctx.parent_node_execution.node_id)
        launch_execution(self.ctx, self._request(launch_ctx, execution_id, launch_plan, inputs))

    def get_status(self, execution_id: identifier_pb2.WorkflowExecutionIdentifier,
                   ) -> execution_pb2.ExecutionClosure | None:
        with self.ctx.db.session() as session:
            row = repo.find_execution(session, execution_id)
            if row is None:
                return None
            closure = execution_pb2.ExecutionClosure.FromString(row.closure_pb)
            # The row's phase is the one admin filters and answers by.
            closure.phase = as_enum(WorkflowPhase, row.phase)
        return closure

    def kill(self, execution_id: identifier_pb2.WorkflowExecutionIdentifier, reason: str) -> None:
        try:
            terminate_execution(self.ctx, execution_id, reason)
        except (errors.FailedPrecondition, errors.NotFound):
            pass  # finished (or gone) meanwhile: nothing left to stop

    def get_launch_plan(self, launch_plan: identifier_pb2.Identifier) -> launch_plan_pb2.LaunchPlan | None:
        with self.ctx.db.session() as session:
            return entities.get_launch_plan(session, launch_plan)

    def _request(self, launch_ctx: LaunchContext, execution_id: identifier_pb2.WorkflowExecutionIdentifier,
                 launch_plan: identifier_pb2.Identifier, inputs: literals_pb2.LiteralMap,
                 ) -> execution_pb2.ExecutionCreateRequest:
        parent_node = launch_ctx.parent_node_execution
        with self.ctx.db.session() as session:
            # One deeper than the parent execution, as FlyteAdmin's execution manager derives it.
            parent = repo.find_execution(session, parent_node.execution_id)
            nesting = execution_pb2.ExecutionSpec.FromString(parent.spec_pb).metadata.nesting if parent else 0
        spec = execution_pb2.ExecutionSpec(
            launch_plan=launch_plan,
            metadata=execution_pb2.ExecutionMetadata(
                mode=execution_pb2.ExecutionMetadata.CHILD_WORKFLOW, nesting=nesting + 1,
                principal=launch_ctx.principal, parent_node_execution=parent_node),
            labels=common_pb2.Labels(values=launch_ctx.labels),
            annotations=common_pb2.Annotations(values=launch_ctx.annotations),
            max_parallelism=launch_ctx.max_parallelism,
            raw_output_data_config=common_pb2.RawOutputDataConfig(output_location_prefix=launch_ctx.raw_output_prefix),
            overwrite_cache=launch_ctx.overwrite_cache,
            envs=common_pb2.Envs(values=[literals_pb2.KeyValuePair(key=k, value=v)
                                         for k, v in launch_ctx.envs.items()]),
        )
        if launch_ctx.interruptible is not None:
            spec.interruptible.CopyFrom(wrappers_pb2.BoolValue(value=launch_ctx.interruptible))
        return execution_pb2.ExecutionCreateRequest(project=execution_id.project, domain=execution_id.domain,
                                                    name=execution_id.name, spec=spec, inputs=inputs)


class AdminTaskReader:
    """tasks.Reader over admin's registered tasks."""

    def __init__(self, ctx: Context):
        self.ctx = ctx

    def get_task(self, task: identifier_pb2.Identifier) -> task_pb2.Task | None:
        with self.ctx.db.session() as session:
            return entities.get_task(session, task)


class AdminRecoveryClient:
    """recovery.Client over admin's node executions (FlytePropeller's recoveryClient.RecoverNodeExecution)."""

    def __init__(self, ctx: Context):
        self.ctx = ctx

    def recover_node_execution(self, execution_id: identifier_pb2.WorkflowExecutionIdentifier, node_id: str,
                               ) -> node_execution_pb2.NodeExecution | None:
        with self.ctx.db.session() as session:
            row = repo.find_node_execution(session, execution_id, node_id)
            if row is None:
                return None
            return node_execution_pb2.NodeExecution(
                id=identifier_pb2.NodeExecutionIdentifier(node_id=node_id, execution_id=execution_id),
                input_uri=row.input_uri or "",
                closure=node_execution_pb2.NodeExecutionClosure.FromString(row.closure_pb))


class AdminSignalClient:
    """The signal client over admin's SignalService (GetOrCreateSignal)."""

    def __init__(self, ctx: Context):
        self.ctx = ctx

    def get_or_create_signal(self, request: signal_pb2.SignalGetOrCreateRequest) -> signal_pb2.Signal:
        return get_or_create_signal(self.ctx, request)
