"""Flyte 2's RunService (what a user's client calls: create a run, read and watch its actions) and
ActionsService (what a task's process calls: enqueue its children, watch them, abort them).

A run is stored with its root action and handed to the engine (propeller/runs.py), which runs its actions as
task attempts; a child enqueued by a parent's process joins the run and wakes the engine. Watch streams send
what changed each time the run's actions do (runs/updates.py), and end when the watched action ends or the
server stops.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from datetime import datetime, timezone

from connectrpc.request import RequestContext
from flyteidl2.actions import actions_service_pb2 as actions_pb
from flyteidl2.common import identifier_pb2
from flyteidl2.task import task_definition_pb2
from flyteidl2.workflow import run_definition_pb2, run_service_pb2, state_service_pb2
from starlette.concurrency import run_in_threadpool

from flytelite.admin.entity_common import validate_project_domain
from flytelite.connect import details, lists, watches
from flytelite.context import CALLER, Context, ExecutionKey
from flytelite.errors import FailedPrecondition, InvalidArgument, NotFound, Unimplemented
from flytelite.idl import ids
from flytelite.runs import store
from flytelite.runs.store import ROOT, Phase
from flytelite.store.flyteworkflow import ExecutionSpec


def _run_key(run: identifier_pb2.RunIdentifier) -> ExecutionKey:
    if not run.project or not run.domain or not run.name:
        raise InvalidArgument(f"a run is named by its project, domain and name; got project={run.project!r} "
                              f"domain={run.domain!r} name={run.name!r}")
    return ExecutionKey(run.project, run.domain, run.name)


def _action_key(action: identifier_pb2.ActionIdentifier) -> tuple[ExecutionKey, str]:
    if not action.name:
        raise InvalidArgument("an action is named by its run and its name; the name is missing")
    return _run_key(action.run), action.name


class RunService:
    def __init__(self, ctx: Context):
        self.ctx = ctx

    async def create_run(self, request: run_service_pb2.CreateRunRequest,
                         ctx: RequestContext) -> run_service_pb2.CreateRunResponse:
        row = await run_in_threadpool(self._create_run, request)
        self.ctx.notify_engine(ExecutionKey(row.project, row.domain, row.run_name))
        return run_service_pb2.CreateRunResponse(run=details.run(row, request.run_id.org))

    def _create_run(self, request: run_service_pb2.CreateRunRequest):
        which = request.WhichOneof("id")
        if which == "run_id":
            key = _run_key(request.run_id)
        elif which == "project_id":
            key = ExecutionKey(request.project_id.name, request.project_id.domain, ids.new_execution_name())
        else:
            raise InvalidArgument("CreateRun needs run_id (to name the run) or project_id (to have it named)")
        task = request.WhichOneof("task")
        if task != "task_spec":
            raise Unimplemented(f"runs of a deployed task or a trigger ({task or 'none given'}) are not served yet; "
                                "send the task's spec (flyte.run does)")
        with self.ctx.db.session() as session:
            validate_project_domain(session, key[0], key[1])
        self._check_code_bundle(request.task_spec.task_template)
        run_spec = run_definition_pb2.ActionSpec().run_spec
        run_spec.CopyFrom(request.run_spec)
        if request.HasField("run_start_time"):
            run_spec.run_start_time.CopyFrom(request.run_start_time)
        elif not run_spec.HasField("run_start_time"):
            run_spec.run_start_time.FromDatetime(self.ctx.clock.now())
        input_uri = self._inputs(key, request)
        root = run_definition_pb2.ActionSpec(
            action_id=identifier_pb2.ActionIdentifier(run=details.run_id(key, request.run_id.org), name=ROOT),
            run_spec=run_spec, input_uri=input_uri, run_output_base=store.run_base(self.ctx, key))
        root.task.spec.CopyFrom(request.task_spec)
        root.task.id.CopyFrom(_task_id(key, request.task_spec))
        spec = ExecutionSpec(
            project=key[0], domain=key[1], name=key[2], inputs_uri=input_uri,
            raw_output_prefix=run_spec.raw_data_storage.raw_data_prefix or self.ctx.blobs.raw_output_prefix(),
            envs={kv.key: kv.value for kv in run_spec.envs.values}, labels=dict(run_spec.labels.values),
            annotations=dict(run_spec.annotations.values), overwrite_cache=run_spec.overwrite_cache,
            principal=caller.name if (caller := CALLER.get()) is not None else "")
        return store.create_run(self.ctx, key, spec, root)

    def _inputs(self, key: ExecutionKey, request: run_service_pb2.CreateRunRequest) -> str:
        """The run's inputs file: one uploaded before (UploadInputs), or those given, written to the run's base."""
        if request.WhichOneof("input_wrapper") == "offloaded_input_data":
            uri = request.offloaded_input_data.uri
            if not self.ctx.blobs.contains(uri) or not self.ctx.blobs.exists(uri):
                raise InvalidArgument(f"the run's inputs {uri!r} are not in this server's blob store; upload them "
                                      "with DataProxyService.UploadInputs")
            return uri
        uri = self.ctx.blobs.join(store.run_base(self.ctx, key), "inputs.pb")
        self.ctx.blobs.write_bytes(uri, request.inputs.SerializeToString())
        return uri

    def _check_code_bundle(self, template) -> None:
        """A code bundle the task names must be in this store: the SDK caches its uploads by the server's address
        and may name one a server that was reset on the same address never received."""
        bundle = store.code_bundle(template)
        if bundle and self.ctx.blobs.contains(bundle) and not self.ctx.blobs.exists(bundle):
            raise FailedPrecondition(
                f"the task's code bundle {bundle} is not in this server's blob store: the flyte SDK remembers "
                "bundles it uploaded to this address before (for a day), and this server never received this one. "
                "Clear the SDK's cache (flyte's cache folder, e.g. ~/.cache/flyte) or change a file, and run again")

    async def get_run_details(self, request: run_service_pb2.GetRunDetailsRequest,
                              ctx: RequestContext) -> run_service_pb2.GetRunDetailsResponse:
        key = _run_key(request.run_id)
        row = await run_in_threadpool(store.get, self.ctx, key, ROOT)
        return run_service_pb2.GetRunDetailsResponse(details=details.run_details(row, request.run_id.org))

    async def get_action_details(self, request: run_service_pb2.GetActionDetailsRequest,
                                 ctx: RequestContext) -> run_service_pb2.GetActionDetailsResponse:
        key, name = _action_key(request.action_id)
        row = await run_in_threadpool(store.get, self.ctx, key, name)
        return run_service_pb2.GetActionDetailsResponse(details=details.details(row, request.action_id.run.org))

    async def watch_action_details(self, request: run_service_pb2.WatchActionDetailsRequest,
                                   ctx: RequestContext) -> AsyncIterator[run_service_pb2.WatchActionDetailsResponse]:
        key, name = _action_key(request.action_id)
        org = request.action_id.run.org
        async for row in self._changes(key, name):
            yield run_service_pb2.WatchActionDetailsResponse(details=details.details(row, org))

    async def watch_run_details(self, request: run_service_pb2.WatchRunDetailsRequest,
                                ctx: RequestContext) -> AsyncIterator[run_service_pb2.WatchRunDetailsResponse]:
        key = _run_key(request.run_id)
        async for row in self._changes(key, ROOT):
            yield run_service_pb2.WatchRunDetailsResponse(details=details.run_details(row, request.run_id.org))

    async def _changes(self, key: ExecutionKey, name: str) -> AsyncIterator:
        """The action's row each time it changed, until it ended (or the server stops)."""
        last = None
        async with self.ctx.run_updates.watching(key) as watch:
            while True:
                row = await run_in_threadpool(store.get, self.ctx, key, name)
                seen = (row.phase, row.state_json, row.attempts, row.done)
                if seen != last:
                    last = seen
                    yield row
                if row.done or not await watch.changed():
                    return

    async def get_action_data_u_r_is(self, request: run_service_pb2.GetActionDataURIsRequest,
                                     ctx: RequestContext) -> run_service_pb2.GetActionDataURIsResponse:
        """GetActionDataURIs (so named by the generated service): where the action's inputs are, and its outputs
        once it succeeded (the folder of its outputs.pb)."""
        key, name = _action_key(request.action_id)
        row = await run_in_threadpool(store.get, self.ctx, key, name)
        found = run_service_pb2.GetActionDataURIsResponse(inputs_uri=store.spec(row).input_uri)
        if row.phase in (Phase.ACTION_PHASE_SUCCEEDED, Phase.ACTION_PHASE_RECOVERED):
            found.outputs_uri = row.output_uri
        return found

    def watch_runs(self, request: run_service_pb2.WatchRunsRequest,
                   ctx: RequestContext) -> AsyncIterator[run_service_pb2.WatchRunsResponse]:
        return watches.watch_runs(self.ctx, request)

    def watch_actions(self, request: run_service_pb2.WatchActionsRequest,
                      ctx: RequestContext) -> AsyncIterator[run_service_pb2.WatchActionsResponse]:
        return watches.watch_actions(self.ctx, request)

    def watch_groups(self, request: run_service_pb2.WatchGroupsRequest,
                     ctx: RequestContext) -> AsyncIterator[run_service_pb2.WatchGroupsResponse]:
        return watches.watch_groups(self.ctx, request)

    async def list_runs(self, request: run_service_pb2.ListRunsRequest,
                        ctx: RequestContext) -> run_service_pb2.ListRunsResponse:
        project = request.project_id
        if not project.name or not project.domain:
            raise InvalidArgument("ListRuns needs project_id's name and domain (the project and domain to list)")
        rows, token = await run_in_threadpool(lists.page, self.ctx, store.runs_query(project.name, project.domain),
                                              request.request, lists.RUN_FIELDS, "ListRuns")
        return run_service_pb2.ListRunsResponse(runs=[details.run(row, request.org) for row in rows], token=token)

    async def list_actions(self, request: run_service_pb2.ListActionsRequest,
                           ctx: RequestContext) -> run_service_pb2.ListActionsResponse:
        key = _run_key(request.run_id)
        if not await run_in_threadpool(store.run_exists, self.ctx, key):
            raise NotFound(f"there is no run {key[2]} in project {key[0]}, domain {key[1]}")
        rows, token = await run_in_threadpool(lists.page, self.ctx, store.actions_query(key), request.request,
                                              lists.ACTION_FIELDS, "ListActions")
        return run_service_pb2.ListActionsResponse(actions=[details.action(row, request.run_id.org) for row in rows],
                                                   token=token)

    async def abort_run(self, request: run_service_pb2.AbortRunRequest,
                        ctx: RequestContext) -> run_service_pb2.AbortRunResponse:
        key = _run_key(request.run_id)
        await self._abort(key, ROOT, request.reason or "aborted by its user")
        return run_service_pb2.AbortRunResponse()

    async def abort_action(self, request: run_service_pb2.AbortActionRequest,
                           ctx: RequestContext) -> run_service_pb2.AbortActionResponse:
        key, name = _action_key(request.action_id)
        await self._abort(key, name, request.reason or "aborted by its user")
        return run_service_pb2.AbortActionResponse()

    async def _abort(self, key: ExecutionKey, name: str, reason: str) -> None:
        if await run_in_threadpool(store.request_abort, self.ctx, key, name, reason):
            self.ctx.notify_engine(key)


class ActionsService:
    def __init__(self, ctx: Context):
        self.ctx = ctx

    async def enqueue(self, request: actions_pb.EnqueueRequest, ctx: RequestContext) -> actions_pb.EnqueueResponse:
        key = await run_in_threadpool(self._enqueue, request)
        self.ctx.run_updates.publish(key)
        self.ctx.notify_engine(key)
        return actions_pb.EnqueueResponse()

    def _enqueue(self, request: actions_pb.EnqueueRequest) -> ExecutionKey:
        action = request.action
        key, name = _action_key(action.action_id)
        if not action.parent_action_name:
            raise InvalidArgument(f"action {name!r} names no parent: only CreateRun makes a run's root action")
        kind = action.WhichOneof("spec")
        if kind is None:
            raise InvalidArgument(f"action {name!r} is neither a task, a trace nor a condition")
        spec = run_definition_pb2.ActionSpec(
            action_id=action.action_id, parent_action_name=action.parent_action_name, run_spec=request.run_spec,
            input_uri=action.input_uri, run_output_base=action.run_output_base, group=action.group)
        getattr(spec, kind).CopyFrom(getattr(action, kind))
        if kind == "trace":
            trace, now = action.trace, self.ctx.clock.now()
            store.enqueue(self.ctx, key, spec, phase=trace.phase or Phase.ACTION_PHASE_SUCCEEDED,
                          output_uri=trace.outputs.output_uri, started_at=_time(trace, "start_time", now),
                          ended_at=_time(trace, "end_time", now))
        else:
            store.enqueue(self.ctx, key, spec)
        return key

    async def watch_for_updates(self, request: actions_pb.WatchForUpdatesRequest,
                                ctx: RequestContext) -> AsyncIterator[actions_pb.WatchForUpdatesResponse]:
        """The parent's children as they are, a sentinel, then each child each time it changed."""
        key, parent = _action_key(request.parent_action_id)
        org = request.parent_action_id.run.org
        sent: dict[str, tuple[int, str]] = {}
        first = True
        async with self.ctx.run_updates.watching(key) as watch:
            while True:
                rows = await run_in_threadpool(store.children, self.ctx, key, parent)
                for row in rows:
                    seen = (row.phase, row.output_uri)
                    if sent.get(row.name) != seen:
                        sent[row.name] = seen
                        yield actions_pb.WatchForUpdatesResponse(action_update=details.update(row, org))
                if first:
                    first = False
                    yield actions_pb.WatchForUpdatesResponse(
                        control_message=state_service_pb2.ControlMessage(sentinel=True))
                if not await watch.changed():
                    return

    async def abort(self, request: actions_pb.AbortRequest, ctx: RequestContext) -> actions_pb.AbortResponse:
        key, name = _action_key(request.action_id)
        if await run_in_threadpool(store.request_abort, self.ctx, key, name, request.reason or "aborted by its parent"):
            self.ctx.notify_engine(key)
        return actions_pb.AbortResponse()


def _task_id(key: ExecutionKey, spec: task_definition_pb2.TaskSpec) -> task_definition_pb2.TaskIdentifier:
    template = spec.task_template
    return task_definition_pb2.TaskIdentifier(project=key[0], domain=key[1], name=template.id.name,
                                              version=template.id.version)


def _time(message, field: str, otherwise: datetime) -> datetime:
    """A timestamp field of `message` as an aware UTC datetime, `otherwise` when it is not set."""
    return getattr(message, field).ToDatetime(tzinfo=timezone.utc) if message.HasField(field) else otherwise
