"""The agent task plugin: task types served by flytekit agents, run as FlytePropeller's agent-service plugin
runs them under its web API plugin machinery (flyteplugins/go/tasks/plugins/webapi/agent/plugin.go,
pluginmachinery/internal/webapi/{core,launcher,monitor,cache}.go).

A sync agent answers ExecuteTaskSync at once. An async agent's task is created once (CreateTask); its
resource meta, output prefix and task category go into the node's plugin state, which the engine persists,
so a restarted server polls it (GetTask every `resync_seconds`) instead of creating it again. Abort and
timeouts call DeleteTask. GetTask failures are counted; past `max_system_failures` in a row the attempt
fails, as the web API cache gives up. Outputs: the agent's literal map written as outputs.pb, or what the
agent wrote itself to the output prefix. The agent's log links, message and custom_info go on the task
execution (a changed message or log list is a new phase version, so each one is reported).
"""

from __future__ import annotations

import base64
import dataclasses
import logging
import posixpath
from dataclasses import dataclass
from enum import Enum
from typing import Any

from flyteidl.admin import agent_pb2
from flyteidl.core import execution_pb2, identifier_pb2, tasks_pb2

from flytelite.context import Context
from flytelite.idl import error_codes as E
from flytelite.idl.error_kinds import SYSTEM, USER
from flytelite.plugins.agents.client import AgentCallFailed, AgentClients
from flytelite.plugins.agents.local import AgentServerFailed, LocalAgentServers
from flytelite.plugins.agents.routing import AgentRoute, AgentRouter, NotServed
from flytelite.plugins.machinery.core import (
    Plugin,
    PluginPhase,
    PluginPhaseInfo,
    PluginState,
    TaskExecutionContext,
)
from flytelite.plugins.machinery.results import written_result
from flytelite.plugins.machinery.target import carries_container
from flytelite.plugins.machinery.template import TemplateError, rendered_command

log = logging.getLogger(__name__)
# The key of the default plugin's own state, for a task no agent serves (AgentPlugin._delegated).
DEFAULT_STATE = "default_plugin"

TaskPhase = execution_pb2.TaskExecution.Phase
# Flyte's error codes (flyteplugins/go/tasks/errors).
TASK_FAILED = "TaskFailedWithError"
CACHE_FAILED = "AutoRefreshCacheFailed"
_WAITING = {TaskPhase.QUEUED: PluginPhase.QUEUED, TaskPhase.WAITING_FOR_RESOURCES: PluginPhase.QUEUED,
            TaskPhase.INITIALIZING: PluginPhase.INITIALIZING, TaskPhase.RUNNING: PluginPhase.RUNNING}
# admin.State, the deprecated field older agents set instead of phase.
_STATES = {agent_pb2.PENDING: TaskPhase.INITIALIZING, agent_pb2.RUNNING: TaskPhase.RUNNING,
           agent_pb2.SUCCEEDED: TaskPhase.SUCCEEDED, agent_pb2.PERMANENT_FAILURE: TaskPhase.FAILED,
           agent_pb2.RETRYABLE_FAILURE: TaskPhase.RETRYABLE_FAILED}



class AgentStatus(str, Enum):
    CREATED = "created"  # an async agent's task exists: poll it
    DONE = "done"        # the agent said it ended (a sync agent's answer, or GetTask's)
    ABORTED = "aborted"  # deleted on abort


@dataclass
class AgentState(PluginState):
    """What the plugin remembers of one attempt's agent task (persisted by the engine; see PluginState)."""

    status: AgentStatus | None = None
    # An async agent's handle on the task (base64), and where its outputs go.
    resource_meta: str = ""
    output_prefix: str = ""
    # [task type, version]: the TaskCategory GetTask and DeleteTask name.
    task_category: list[Any] | None = None
    # GetTask failures in a row (the attempt fails past agent_service.max_system_failures).
    sync_failures: int = 0
    # What was last reported, repeated while the agent cannot be reached: [phase, reason, log uris], the
    # plugin phase's value, the phase version (2 for a phase's first report), the reason.
    last_seen: list[Any] | None = None
    last_phase: int | None = None
    last_version: int = 2
    last_reason: str = ""

    def __post_init__(self) -> None:
        if self.status is not None:
            self.status = AgentStatus(self.status)


class AgentPlugin(Plugin):
    id = "agent-service"  # FlytePropeller's plugin id
    task_types = ()  # whatever the agents serve (routing.py)
    # Runs the tasks of types no agent serves that carry a container (set by the registry).
    default: Plugin | None = None

    def __init__(self, ctx: Context):
        self.ctx = ctx
        self.cfg = ctx.config.agent_service
        self.clients = AgentClients()
        local = None
        if self.cfg.local_agents:
            local = LocalAgentServers(ctx.config.logs_dir, ctx.config.work_dir, ctx.blobs.task_environment,
                                      self.cfg.local_start_seconds, self.cfg.default_agent.default_timeout_seconds)
        self.local = local
        self.router = AgentRouter(self.cfg, self.clients, local, ctx.config.interpreter_for)

    def setup(self, loop) -> None:
        self.router.start()

    def close(self) -> None:
        self.router.close()
        self.clients.close()
        if self.local is not None:
            self.local.close()

    # -- the attempt's life ------------------------------------------------------------------
    def handle(self, tctx: TaskExecutionContext) -> PluginPhaseInfo:
        delegated = self._delegated(tctx)
        if delegated is not None:
            return delegated[0].handle(delegated[1])
        try:
            route = self.router.route(tctx.task, tctx.wake)
        except NotServed as e:
            if self.default is not None and carries_container(tctx.task):
                tctx.state[DEFAULT_STATE] = {}
                return self.handle(tctx)
            return PluginPhaseInfo.failure(E.UNSUPPORTED_TASK_TYPE, f"task {tctx.task.id.name}: {e}",
                                           kind=USER, retryable=False)
        except AgentServerFailed as e:
            return PluginPhaseInfo.failure(E.AGENT_SERVER_FAILED, str(e), kind=SYSTEM, retryable=True)
        st = AgentState.load(tctx.state)
        try:
            if route is None:
                if st.status == AgentStatus.CREATED:  # its agent server died and is starting again
                    return self._last_reported(st)
                return PluginPhaseInfo(PluginPhase.QUEUED, version=1, reason="starting the agent server")
            if st.status is None or (st.status == AgentStatus.DONE and not st.resource_meta):
                return self._launch(tctx, st, route)  # not yet, or a sync agent's answer the engine did not persist
            return self._monitor(tctx, st, route)
        finally:
            st.store(tctx.state)

    def _launch(self, tctx: TaskExecutionContext, st: AgentState, route: AgentRoute) -> PluginPhaseInfo:
        """Flyte's launch(): a sync agent's result at once, or an async agent's resource created once."""
        try:
            template = self._template(tctx)
        except TemplateError as e:
            return PluginPhaseInfo.failure(E.BAD_TASK_TEMPLATE, f"task {tctx.task.id.name}: {e}", kind=USER,
                                           retryable=False)
        client = self.clients.get(route.deployment)
        metadata = _execution_metadata(tctx)
        tracing = self.ctx.tracing
        try:
            # A span of the round; the agent gets its context as the call's W3C traceparent.
            with tracing.span("launch agent task", attributes={"flyte.task": tctx.task.id.name,
                                                               "flyte.agent": route.deployment.endpoint}):
                if route.is_sync:
                    header = agent_pb2.CreateRequestHeader(template=template, output_prefix=tctx.output_prefix,
                                                           task_execution_metadata=metadata)
                    resource = client.execute_sync(header, tctx.inputs, tracing.traceparent())
                    st.status, st.output_prefix = AgentStatus.DONE, tctx.output_prefix
                    return self._status(tctx, st, resource, route)
                meta = client.create(agent_pb2.CreateTaskRequest(
                    inputs=tctx.inputs, template=template, output_prefix=tctx.output_prefix,
                    task_execution_metadata=metadata), tracing.traceparent())
        except AgentCallFailed as e:
            return PluginPhaseInfo.failure(TASK_FAILED, f"failed to create task from agent: {e}", kind=USER,
                                           retryable=True, logs=_server_log(self.ctx, route))
        st.status, st.resource_meta = AgentStatus.CREATED, base64.b64encode(meta).decode()
        st.output_prefix, st.task_category = tctx.output_prefix, [template.type, template.task_type_version]
        st.sync_failures = 0
        info = PluginPhaseInfo(PluginPhase.QUEUED, version=2, reason="launched", poll_after=self.cfg.resync_seconds,
                               logs=_server_log(self.ctx, route))
        self._version(st, info)
        return info

    def _monitor(self, tctx: TaskExecutionContext, st: AgentState, route: AgentRoute) -> PluginPhaseInfo:
        if st.status == AgentStatus.DONE:  # ended in a round whose status was not persisted: ask again
            st.status = AgentStatus.CREATED
        assert st.task_category is not None
        name, version = st.task_category
        request = agent_pb2.GetTaskRequest(
            task_type=name, task_category=agent_pb2.TaskCategory(name=name, version=version),
            resource_meta=base64.b64decode(st.resource_meta), output_prefix=st.output_prefix)
        try:
            resource = self.clients.get(route.deployment).get(request)
        except AgentCallFailed as e:
            st.sync_failures += 1
            if st.sync_failures > self.cfg.max_system_failures:
                return PluginPhaseInfo.failure(CACHE_FAILED, f"{e} ({st.sync_failures} times in a row)",
                                               kind=USER, retryable=False, logs=_server_log(self.ctx, route))
            log.info("%s; asking again in %.1f s", e, self.cfg.resync_seconds)
            return self._last_reported(st)
        st.sync_failures = 0
        info = self._status(tctx, st, resource, route)
        if not info.phase.terminal:
            info.poll_after = self.cfg.resync_seconds
        return info

    def _status(self, tctx: TaskExecutionContext, st: AgentState, resource: agent_pb2.Resource,
                route: AgentRoute) -> PluginPhaseInfo:
        """Flyte's Status(): the agent's phase (or its older state) as a plugin phase; outputs on success."""
        logs = list(resource.log_links) + _server_log(self.ctx, route)
        custom = resource.custom_info if resource.HasField("custom_info") else None
        phase = resource.phase or _STATES.get(resource.state, TaskPhase.UNDEFINED)
        code = resource.agent_error.code or TASK_FAILED
        kind = SYSTEM if resource.agent_error.origin == SYSTEM else USER
        message = resource.message
        if phase in _WAITING:
            info = PluginPhaseInfo(_WAITING[phase], reason=message, logs=logs, custom_info=custom)
            info.version = self._version(st, info)
            return info
        st.status = AgentStatus.DONE
        if phase == TaskPhase.SUCCEEDED:
            info = self._succeeded(tctx, st, resource, logs, custom)
            info.reason = info.reason or message
            return info
        if phase == TaskPhase.ABORTED:
            return PluginPhaseInfo.failure(code, "failed to run the job with aborted phase.", kind=kind,
                                           retryable=False, logs=logs, custom_info=custom)
        if phase in (TaskPhase.FAILED, TaskPhase.RETRYABLE_FAILED):
            return PluginPhaseInfo.failure(code, f"failed to run the job: {message}", kind=kind,
                                           retryable=phase == TaskPhase.RETRYABLE_FAILED, logs=logs, custom_info=custom)
        return PluginPhaseInfo.failure(E.UNKNOWN_PHASE, f"the agent answered with unknown phase {phase} "
                                       f"(state {resource.state})", kind=SYSTEM, retryable=True, logs=logs)

    def _succeeded(self, tctx: TaskExecutionContext, st: AgentState, resource: agent_pb2.Resource, logs,
                   custom) -> PluginPhaseInfo:
        """Flyte's writeOutput: the agent's literal map, else what it wrote itself to the output prefix."""
        prefix = st.output_prefix or tctx.output_prefix
        if not len(tctx.task.interface.outputs.variables):
            return PluginPhaseInfo(PluginPhase.SUCCESS, logs=logs, custom_info=custom)
        if resource.HasField("outputs"):
            self.ctx.blobs.write_proto(posixpath.join(prefix, "outputs.pb"), resource.outputs)
            return PluginPhaseInfo(PluginPhase.SUCCESS, logs=logs, custom_info=custom)
        written = written_result(self.ctx.blobs, prefix, logs)
        if written is not None:
            written.custom_info = custom
            return written
        return PluginPhaseInfo.failure(
            E.OUTPUTS_NOT_FOUND, f"the agent reported task {tctx.task.id.name} succeeded without outputs, "
            f"and wrote no outputs.pb or error.pb to {prefix}", kind=SYSTEM, retryable=True, logs=logs)

    def _version(self, st: AgentState, info: PluginPhaseInfo) -> int:
        """A new phase version when the agent's message or log links change within a phase (so each is
        reported); remembered for rounds whose GetTask fails."""
        seen = [info.phase.value, info.reason, [log.uri for log in info.logs]]
        if st.last_seen != seen:
            st.last_version = st.last_version + 1 if st.last_phase == info.phase.value else 2
            st.last_seen, st.last_phase, st.last_reason = seen, info.phase.value, info.reason
        return st.last_version

    def _last_reported(self, st: AgentState) -> PluginPhaseInfo:
        """The phase last reported, unchanged, to be asked again later (the agent cannot be reached now)."""
        phase = PluginPhase(st.last_phase) if st.last_phase is not None else PluginPhase.QUEUED
        return PluginPhaseInfo(phase, version=st.last_version, reason=st.last_reason,
                               poll_after=self.cfg.resync_seconds)

    def _delegated(self, tctx: TaskExecutionContext) -> tuple[Plugin, TaskExecutionContext] | None:
        """The default plugin and its view of the attempt, when no agent serves the task's type and the default
        plugin runs it (its state is kept under DEFAULT_STATE, apart from the agent's)."""
        state = tctx.state.get(DEFAULT_STATE)
        if state is None or self.default is None:
            return None
        return self.default, dataclasses.replace(tctx, state=state)

    def finalize(self, tctx: TaskExecutionContext) -> None:
        delegated = self._delegated(tctx)
        if delegated is not None:
            delegated[0].finalize(delegated[1])

    def abort(self, tctx: TaskExecutionContext) -> None:
        """Flyte's Abort: DeleteTask on the agent that holds the task (nothing for a sync agent)."""
        delegated = self._delegated(tctx)
        if delegated is not None:
            delegated[0].abort(delegated[1])
            return
        st = AgentState.load(tctx.state)
        if st.status != AgentStatus.CREATED or st.task_category is None:
            return
        name, version = st.task_category
        request = agent_pb2.DeleteTaskRequest(task_type=name,
                                              task_category=agent_pb2.TaskCategory(name=name, version=version),
                                              resource_meta=base64.b64decode(st.resource_meta))
        try:
            route = self.router.route_blocking(tctx.task, self.cfg.local_start_seconds)
            self.clients.get(route.deployment).delete(request)
        except (AgentCallFailed, AgentServerFailed, NotServed) as e:
            log.warning("could not delete the agent task of %s/%s attempt %d: %s", "-".join(tctx.key), tctx.node_id,
                        tctx.attempt, e)
        st.status = AgentStatus.ABORTED
        st.store(tctx.state)

    # -- what the agent is sent ----------------------------------------------------------------
    def _template(self, tctx: TaskExecutionContext) -> tasks_pb2.TaskTemplate:
        """The task template, its container args rendered for this attempt as Flyte renders them."""
        template = tasks_pb2.TaskTemplate()
        template.CopyFrom(tctx.task)
        if template.HasField("container") and len(template.container.args):
            args = rendered_command(tctx, list(template.container.args))
            del template.container.args[:]
            template.container.args.extend(args)
        return template


def _execution_metadata(tctx: TaskExecutionContext) -> agent_pb2.TaskExecutionMetadata:
    """FlytePropeller's buildTaskExecutionMetadata."""
    project, domain, name = tctx.key
    spec = tctx.spec
    return agent_pb2.TaskExecutionMetadata(
        task_execution_id=identifier_pb2.TaskExecutionIdentifier(
            task_id=tctx.task.id, retry_attempt=tctx.attempt,
            node_execution_id=identifier_pb2.NodeExecutionIdentifier(
                node_id=tctx.node_id,
                execution_id=identifier_pb2.WorkflowExecutionIdentifier(project=project, domain=domain, name=name))),
        namespace=tctx.namespace, labels=spec.labels, annotations=spec.annotations,
        k8s_service_account=spec.service_account, environment_variables=spec.envs)


def _server_log(ctx: Context, route: AgentRoute) -> list[execution_pb2.TaskLog]:
    """A link to the log of the local agent server that runs the task."""
    if not route.log_path or not ctx.public_url:
        return []
    try:
        rel = posixpath.relpath(route.log_path, str(ctx.config.logs_dir))
    except ValueError:
        return []
    return [execution_pb2.TaskLog(uri=f"{ctx.public_url}/logs/{rel}", name="Agent server log (flytelite)")]
