"""Launching a workflow execution: FlyteAdmin's CreateExecution, usable by every caller that launches.

The API (CreateExecution, RelaunchExecution), the scheduler (mode SCHEDULED) and
launch-plan nodes (mode CHILD_WORKFLOW, `spec.metadata.parent_node_execution`
set) all come through `launch_execution`. It resolves the launch plan and the
inputs, writes `inputs.pb` / `user_inputs.pb` to the execution's data dir,
stores the Execution row and the FlyteWorkflow the engine runs, and wakes the
engine. It never runs anything itself.
"""

from __future__ import annotations

import re
import threading
import time
from dataclasses import dataclass
from typing import Any, cast

from flyteidl.admin import execution_pb2, launch_plan_pb2
from flyteidl.admin import matchable_resource_pb2 as M
from flyteidl.core import compiler_pb2, interface_pb2, literals_pb2
from flyteidl.core import identifier_pb2 as idpb
from sqlalchemy import Table
from sqlalchemy.exc import IntegrityError

from flytelite.admin import task_resources
from flytelite.admin.entity_common import (
    not_found,
    typed_id,
    validate_identifier,
    validate_length,
    validate_project_domain,
)
from flytelite.admin.inputs import resolve_inputs
from flytelite.admin.single_task import ensure_single_task_launch_plan
from flytelite.context import CALLER, Context, ExecutionKey
from flytelite.errors import (
    AlreadyExists,
    ConcurrencyLimitReached,
    FailedPrecondition,
    InvalidArgument,
    NotFound,
)
from flytelite.idl import ids
from flytelite.idl.enums import enum_name
from flytelite.idl.phases import WorkflowPhase
from flytelite.idl.times import to_timestamp
from flytelite.metrics import EXECUTION_MANAGER
from flytelite.notifications.email import execution_notifications
from flytelite.store import attributes, entities
from flytelite.store import executions as repo
from flytelite.store.flyteworkflow import ExecutionSpec as EngineSpec
from flytelite.store.models import Execution, ExecutionTag, FlyteWorkflow

MAX_NAME_LENGTH = 63
_NAME = re.compile(r"^[a-z][a-z\-0-9]*$")
# flytekit sends this principal and expects the server to put the caller's identity in its place.
_CLIENT_PLACEHOLDER_PRINCIPAL = "placeholder"


@dataclass(frozen=True)
class LaunchTarget:
    """A launch plan version and the compiled workflow it runs: read once, shared by every launch (read only)."""

    launch_plan_id: idpb.Identifier
    spec: launch_plan_pb2.LaunchPlanSpec
    expected_inputs: interface_pb2.ParameterMap
    workflow_id: idpb.Identifier
    # The workflow's CompiledWorkflowClosure, serialized: what each execution's FlyteWorkflow row holds.
    compiled_pb: bytes


class _NameReservations:
    """Names being created right now, so two concurrent creates of one name never both write its inputs."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._names: set[tuple[str, str, str]] = set()

    def reserve(self, key: tuple[str, str, str]) -> None:
        with self._lock:
            if key in self._names:
                raise AlreadyExists(f"execution {'/'.join(key)} is being created by another request")
            self._names.add(key)

    def release(self, key: tuple[str, str, str]) -> None:
        with self._lock:
            self._names.discard(key)


_reservations = _NameReservations()


def launch_execution(ctx: Context, request: execution_pb2.ExecutionCreateRequest) -> idpb.WorkflowExecutionIdentifier:
    """Create an execution as FlyteAdmin does and wake the engine; returns its identifier."""
    requested = time.perf_counter()
    _validate(ctx, request)
    spec = execution_pb2.ExecutionSpec()
    spec.CopyFrom(request.spec)
    # Before flyteidl 0.15 the inputs travelled in the spec; old clients still send them there.
    user_inputs = request.inputs if request.inputs.literals else spec.inputs
    spec.ClearField("inputs")

    lp_id = spec.launch_plan
    if lp_id.resource_type == ids.TASK:
        lp_id = ensure_single_task_launch_plan(ctx, lp_id)
    target = load_launch_target(ctx, lp_id)
    inputs = resolve_inputs(user_inputs, target.spec.fixed_inputs, target.expected_inputs,
                            ids.describe(target.launch_plan_id))

    name = request.name or ids.new_execution_name()
    key = ExecutionKey(request.project, request.domain, name)
    _reservations.reserve(key)
    try:
        exec_id = ids.execution_id(*key)
        parent_row_id, parent = None, None
        # A generated name is new (20 random characters); a chosen one may be taken, and its inputs must stay.
        if request.name or spec.metadata.HasField("parent_node_execution"):
            with ctx.db.session() as session:
                if repo.find_execution(session, exec_id) is not None:
                    raise AlreadyExists(f"{ids.describe_execution(exec_id)} already exists; "
                                        f"choose another name or leave it empty to get a generated one")
                parent_row_id, parent = _parent_node_execution(session, spec)
        exec_dir = ctx.blobs.execution_dir(*key)
        inputs_uri = ctx.blobs.join(exec_dir, "inputs.pb")
        user_inputs_uri = ctx.blobs.join(exec_dir, "user_inputs.pb")
        ctx.blobs.write_proto(inputs_uri, inputs)
        ctx.blobs.write_proto(user_inputs_uri, user_inputs)
        _store(ctx, exec_id, spec, target, inputs_uri, user_inputs_uri, parent_row_id, parent)
    finally:
        _reservations.release(key)
    ctx.notify_engine(key)
    metrics = ctx.metrics
    metrics.inc(f"{EXECUTION_MANAGER}executions_created", "overall count of successfully completed CreateExecutionRequests")
    metrics.observe(f"{EXECUTION_MANAGER}acceptance_delay", "delay in seconds from when an execution was requested "
                    "to be created and when it actually was", time.perf_counter() - requested)
    return exec_id


def load_launch_target(ctx: Context, lp_id: idpb.Identifier) -> LaunchTarget:
    lp_id = typed_id(lp_id, ids.LAUNCH_PLAN)
    return ctx.versions.get(("launch target", lp_id.SerializeToString(deterministic=True)),
                            lambda: _read_launch_target(ctx, lp_id))


def _read_launch_target(ctx: Context, lp_id: idpb.Identifier) -> LaunchTarget:
    with ctx.db.session() as session:
        lp = entities.get_launch_plan(session, lp_id)
        if lp is None:
            raise not_found(session, lp_id)
        wf_id = typed_id(lp.spec.workflow_id, ids.WORKFLOW)
        wf = entities.get_workflow(session, wf_id)
        if wf is None:
            raise NotFound(f"{ids.describe(wf_id)}, which {ids.describe(lp_id)} runs, does not exist")
    return LaunchTarget(lp_id, lp.spec, lp.closure.expected_inputs, wf_id,
                        wf.closure.compiled_workflow.SerializeToString())


def _validate(ctx: Context, request: execution_pb2.ExecutionCreateRequest) -> None:
    if request.name:
        if len(request.name) > MAX_NAME_LENGTH:
            raise InvalidArgument(f"execution name {request.name!r} is longer than {MAX_NAME_LENGTH} characters")
        if not _NAME.match(request.name.lower()):
            raise InvalidArgument(f"execution name {request.name!r} must start with a letter and contain only "
                                  f"lowercase letters, digits and '-'")
    # Nothing deletes a project (archiving matters to registration only): one found once is there for good.
    ctx.versions.get(("project", request.project, request.domain), lambda: _require_project_domain(ctx, request))
    if not request.HasField("spec"):
        raise InvalidArgument("an execution needs a spec naming the launch plan (or task) to run")
    lp = request.spec.launch_plan
    if lp.resource_type not in (ids.LAUNCH_PLAN, ids.TASK):
        raise InvalidArgument(f"spec.launch_plan must name a launch plan or a task, not a "
                              f"{enum_name(idpb.ResourceType, lp.resource_type)}")
    validate_identifier(lp, lp.resource_type)


def _require_project_domain(ctx: Context, request: execution_pb2.ExecutionCreateRequest) -> bool:
    with ctx.db.session() as session:
        validate_project_domain(session, request.project, request.domain)
    return True


def _parent_node_execution(session, spec: execution_pb2.ExecutionSpec) -> tuple[int | None, idpb.NodeExecutionIdentifier | None]:
    if not spec.metadata.HasField("parent_node_execution"):
        return None, None
    parent = spec.metadata.parent_node_execution
    return repo.get_node_execution(session, parent).id, parent


def _principal(spec: execution_pb2.ExecutionSpec) -> str:
    """The signed-in caller, as FlyteAdmin records its identity; without authentication, what the client says
    unless it is flytekit's stand-in."""
    caller = CALLER.get()
    if caller is not None:
        return caller.name
    principal = spec.metadata.principal
    return "" if principal == _CLIENT_PLACEHOLDER_PRINCIPAL else principal


def _store(ctx: Context, exec_id: idpb.WorkflowExecutionIdentifier, spec: execution_pb2.ExecutionSpec,
           target: LaunchTarget, inputs_uri: str, user_inputs_uri: str, parent_row_id: int | None,
           parent: idpb.NodeExecutionIdentifier | None) -> None:
    now = ctx.clock.now()
    lp = target.spec
    matched = _matchable(ctx, exec_id, target)
    wec = matched.get(M.WORKFLOW_EXECUTION_CONFIG, M.MatchingAttributes()).workflow_execution_config
    spec.metadata.principal = _principal(spec)
    spec.max_parallelism = (spec.max_parallelism or lp.max_parallelism or wec.max_parallelism
                            or ctx.config.engine.default_max_parallelism)
    # The labels that apply are the execution's own, as its spec lists them and its tags rows filter them.
    labels = dict(spec.labels.values or lp.labels.values or wec.labels.values)
    if not spec.labels.values:
        spec.labels.values.update(labels)
    closure = execution_pb2.ExecutionClosure(
        phase=WorkflowPhase.UNDEFINED, created_at=to_timestamp(now), updated_at=to_timestamp(now),
        workflow_id=target.workflow_id,
        state_change_details=execution_pb2.ExecutionStateChangeDetails(
            state=execution_pb2.EXECUTION_ACTIVE, principal=spec.metadata.principal, occurred_at=to_timestamp(now)),
        notifications=execution_notifications(lp.entity_metadata.notifications, spec),
    )
    is_task = spec.launch_plan.resource_type == ids.TASK
    columns = dict(
        project=exec_id.project, domain=exec_id.domain, name=exec_id.name,
        launch_plan_name=target.launch_plan_id.name, launch_plan_version=target.launch_plan_id.version,
        workflow_name=target.workflow_id.name, workflow_version=target.workflow_id.version,
        task_name=spec.launch_plan.name if is_task else "",
        phase=0, mode=spec.metadata.mode, state=execution_pb2.EXECUTION_ACTIVE, launched_by=spec.metadata.principal[:255],
        spec_pb=spec.SerializeToString(), closure_pb=closure.SerializeToString(),
        inputs_uri=inputs_uri, user_inputs_uri=user_inputs_uri, error_kind="",
        parent_node_execution_id=parent_row_id, created_at=now, updated_at=now, started_at=None, duration=0.0,
    )
    # Each setting from the request, else the launch plan, else the matching WORKFLOW_EXECUTION_CONFIG
    # attributes, else the server's default, as FlyteAdmin merges them.
    engine_spec = EngineSpec(
        project=exec_id.project, domain=exec_id.domain, name=exec_id.name, inputs_uri=inputs_uri,
        raw_output_prefix=(spec.raw_output_data_config.output_location_prefix
                           or lp.raw_output_data_config.output_location_prefix
                           or wec.raw_output_data_config.output_location_prefix
                           or ctx.blobs.raw_output_prefix()),
        launch_plan=_id_str(target.launch_plan_id), workflow=_id_str(target.workflow_id),
        max_parallelism=spec.max_parallelism,
        envs={kv.key: kv.value for kv in (spec.envs.values or lp.envs.values or wec.envs.values)},
        labels=labels,
        annotations=dict(spec.annotations.values or lp.annotations.values or wec.annotations.values),
        interruptible=_interruptible(spec, lp, wec),
        overwrite_cache=spec.overwrite_cache or lp.overwrite_cache or wec.overwrite_cache,
        principal=spec.metadata.principal,
        service_account=(spec.security_context.run_as.k8s_service_account
                         or lp.security_context.run_as.k8s_service_account
                         or wec.security_context.run_as.k8s_service_account),
        task_plugins={o.task_type: [list(o.plugin_id), o.missing_plugin_behavior]
                      for o in matched.get(M.PLUGIN_OVERRIDE, M.MatchingAttributes()).plugin_overrides.overrides},
        parent_execution=parent.execution_id.name if parent else "",
        parent_node_id=parent.node_id if parent else "",
        # A recovery copies what succeeded in the original; the engine must know it before its first look.
        recover_from=(spec.metadata.reference_execution.name
                      if spec.metadata.mode == execution_pb2.ExecutionMetadata.RECOVERED else ""),
        traceparent=ctx.tracing.traceparent(),
    )
    flyte_workflow = dict(
        project=exec_id.project, domain=exec_id.domain, name=exec_id.name,
        closure_pb=_with_task_resources(ctx, target, matched.get(M.TASK_RESOURCE)),
        spec_json=engine_spec.to_json(), status_json="{}", abort_cause=None, done=False, created_at=now,
        updated_at=now, lease_owner=None, lease_expires_at=None,
    )
    rows: list[tuple[Table, dict[str, Any]]] = [(_table(Execution), columns), (_table(FlyteWorkflow), flyte_workflow)]
    rows += [(_table(ExecutionTag), tag) for tag in _tags(exec_id, engine_spec.labels, spec.tags)]
    try:
        if lp.HasField("concurrency_policy"):
            _insert_within_limit(ctx, rows, target.launch_plan_id, lp.concurrency_policy)
        else:
            ctx.db.group_commit.insert(rows)
    except IntegrityError:
        raise AlreadyExists(f"{ids.describe_execution(exec_id)} already exists") from None


def _insert_within_limit(ctx: Context, rows: list[tuple[Table, dict[str, Any]]], lp_id: idpb.Identifier,
                         policy: launch_plan_pb2.ConcurrencyPolicy) -> None:
    """Add the execution unless the launch plan's unfinished executions (any version) are at the policy's
    `max`, as FlyteAdmin 1.16 checks it. The count and the insert happen under the launch plan's lock, so
    simultaneous creates, on any replica, admit exactly `max` (FlyteAdmin's check may let more through)."""
    with ctx.db.session() as session:
        repo.lock_launch_plan(session, lp_id.project, lp_id.domain, lp_id.name)
        if repo.count_unfinished(session, lp_id.project, lp_id.domain, lp_id.name) >= policy.max:
            if policy.behavior == launch_plan_pb2.CONCURRENCY_LIMIT_BEHAVIOR_SKIP:
                ctx.metrics.inc(f"{EXECUTION_MANAGER}concurrency_limit_hits", "count of times concurrency limits "
                                "were hit for launch plans", project=lp_id.project, domain=lp_id.domain,
                                name=lp_id.name)
                raise ConcurrencyLimitReached(f"concurrency limit ({policy.max}) reached for launch plan "
                                              f"{lp_id.name}; skipping execution")
            if policy.behavior != launch_plan_pb2.CONCURRENCY_LIMIT_BEHAVIOR_UNSPECIFIED:
                raise FailedPrecondition(f"unsupported concurrency-limit behavior: {policy.behavior} (launch plan "
                                         f"{lp_id.name}); flytelite knows SKIP")
        for table, columns in rows:
            session.execute(table.insert(), columns)


def _tags(exec_id: idpb.WorkflowExecutionIdentifier, labels: dict[str, str], tags) -> list[dict]:
    """The columns of the execution's ExecutionTag rows."""
    pairs = {**{tag: "" for tag in tags}, **labels}
    for key, value in pairs.items():
        validate_length("execution label or tag", key)
        validate_length(f"value of execution label {key!r}", value)
    return [dict(project=exec_id.project, domain=exec_id.domain, execution_name=exec_id.name, key=key, value=value)
            for key, value in pairs.items()]


def _interruptible(spec: execution_pb2.ExecutionSpec, lp: launch_plan_pb2.LaunchPlanSpec,
                   wec: M.WorkflowExecutionConfig) -> bool | None:
    for source in (spec, lp, wec):
        if source.HasField("interruptible"):
            return source.interruptible.value
    return None


def _with_task_resources(ctx: Context, target: LaunchTarget, matched: M.MatchingAttributes | None) -> bytes:
    """The compiled workflow the execution runs, its tasks' resources set from the platform's defaults and limits
    (task_resources.py); the launch plan's own when there are none, or they change nothing."""
    defaults, limits = task_resources.platform(ctx.config.task_resources,
                                               matched.task_resource_attributes if matched is not None else None)
    if not defaults and not limits:
        return target.compiled_pb
    closure = compiler_pb2.CompiledWorkflowClosure.FromString(target.compiled_pb)
    return closure.SerializeToString() if task_resources.apply(closure, defaults, limits) else target.compiled_pb


def _matchable(ctx: Context, exec_id: idpb.WorkflowExecutionIdentifier,
               target: LaunchTarget) -> dict[int, M.MatchingAttributes]:
    """The matchable attributes a launch takes (workflow execution config, plugin overrides, task resources),
    most specific level first: the launch plan's workflow in the execution's project and domain, then the
    project and domain, then the project."""
    with ctx.db.session() as session:
        return attributes.match(session, [M.WORKFLOW_EXECUTION_CONFIG, M.PLUGIN_OVERRIDE, M.TASK_RESOURCE],
                                exec_id.project, exec_id.domain, target.workflow_id.name, target.launch_plan_id.name)


def _id_str(ident: idpb.Identifier) -> str:
    return f"{ident.project}/{ident.domain}/{ident.name}/{ident.version}"


def relaunch_request(original: Execution, user_inputs: literals_pb2.LiteralMap, name: str,
                     overwrite_cache: bool) -> execution_pb2.ExecutionCreateRequest:
    """The create request that runs `original` again with the inputs its user gave, as mode RELAUNCH."""
    spec = execution_pb2.ExecutionSpec.FromString(original.spec_pb)
    spec.metadata.mode = execution_pb2.ExecutionMetadata.RELAUNCH
    spec.metadata.reference_execution.CopyFrom(repo.execution_identifier(original))
    spec.metadata.ClearField("system_metadata")
    spec.overwrite_cache = overwrite_cache
    return execution_pb2.ExecutionCreateRequest(project=original.project, domain=original.domain, name=name,
                                                spec=spec, inputs=user_inputs)


def _table(model: type) -> Table:
    """A mapped class's table (typed by SQLAlchemy as any FROM clause; these are declared tables)."""
    return cast(Table, model.__table__)  # type: ignore[attr-defined]
