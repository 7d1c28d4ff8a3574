"""A Flyte 2 run's round (flyteidl2): its unfinished actions, each a task whose attempts run through the task
plugins as Flyte 1 tasks' do.

Flyte 2 has no workflow graph: a run is its root action `a0`, whose process enqueues children while it runs
(ActionsService.Enqueue), and those theirs. The engine drives a run as one unit under one lease, as it drives a
Flyte 1 execution. A round glances at the run's unfinished actions (runs/store.py), looks only at those due (new,
woken by their plugin, their time come, being aborted; see Memo) and writes the ones that changed, with the
lease's fence, in one transaction: a round costs what changed, not what runs. An action's attempt is a plugin
attempt: its template is flyteidl2's TaskTemplate, which is flyteidl's with fields added, read as flyteidl's. A
failed attempt is retried within the task's retries (a user error, after the task's backoff) or the engine's
system retries (a system error), each attempt writing under `<run base>/<action>/<attempt>`. An aborted action,
or one whose parent ended (a parent's process that ended cannot wait for it), is aborted with its attempt.

A cached task (flyte.Cache) is looked up before its attempt starts and its outputs stored once it succeeded,
through the catalog as a Flyte 1 task node's (propeller/nodes/task/cache.py), serialized ones under the
catalog's reservations; a hit succeeds without starting anything.

A task's time bounds (flyte.Timeout) are kept here: `max_runtime` (metadata.timeout) bounds each attempt from its
first RUNNING, `queued_timeout` each attempt until then, both retried within the task's retries; `deadline` bounds
the action from its enqueueing across attempts and is final. A bound that passes stops the attempt, and the action
that ends on it is TIMED_OUT with the bound's code, from which the SDK raises its TaskTimeoutError.
"""

from __future__ import annotations

import json
import logging
import math
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime, timedelta

from flyteidl.core import identifier_pb2, literals_pb2, tasks_pb2
from flyteidl2.workflow import run_definition_pb2
from sqlalchemy.orm import Session

from flytelite.context import Context, ExecutionKey
from flytelite.errors import InvalidArgument
from flytelite.idl import error_codes as E
from flytelite.idl.enums import as_enum
from flytelite.idl.error_kinds import SYSTEM, USER, ErrorInfo
from flytelite.plugins.machinery.core import Plugin, PluginPhase, PluginPhaseInfo, TaskExecutionContext
from flytelite.plugins.registry import PluginNotFound, PluginRegistry
from flytelite.propeller.nodes.task.cache import (
    CacheAction,
    CacheCheck,
    CacheRun,
    CacheState,
    after_success,
    before_run,
    release,
)
from flytelite.propeller.status import iso, parse_iso
from flytelite.runs import store
from flytelite.runs.store import Phase
from flytelite.store.flyteworkflow import ExecutionSpec
from flytelite.store.models import Action

log = logging.getLogger(__name__)

_PHASES = {PluginPhase.QUEUED: Phase.ACTION_PHASE_QUEUED, PluginPhase.INITIALIZING: Phase.ACTION_PHASE_INITIALIZING,
           PluginPhase.RUNNING: Phase.ACTION_PHASE_RUNNING, PluginPhase.SUCCESS: Phase.ACTION_PHASE_SUCCEEDED}
# Flyte 2's task types of the `flyte` SDK's Python tasks: plain, and of a reusable environment (ReusePolicy), whose
# calls run as the plain ones do (each in a process of its own, plugins/local/action.py).
TASK_TYPES = ("python", "actor")
# A run's rounds look at every unfinished action at least this often (Memo), and at the QUEUED ones skipped
# because an earlier one found no task slot after this many seconds (as the plugin polls for a slot).
SWEEP_SECONDS = 30.0
NO_ROOM_SECONDS = 1.0
# Up to this many unfinished actions, a round reads them all in one query rather than glancing first.
READ_WHOLE = 64


@dataclass
class Bound:
    """A time bound an attempt is under: when it passes, the error it ends the attempt with, and whether that is
    final (no retry)."""
    at: datetime
    code: str
    message: str
    final: bool


@dataclass
class Look:
    """What a round learnt so far of its run's actions."""

    # An action was told that every task slot is taken.
    no_room: bool = False


@dataclass
class Memo:
    """What a run's rounds remember between them, in this replica's memory: when each unfinished action needs a
    look again, which ones something woke meanwhile, and what the last round saw. A round looks only at the
    actions due (see due); the others cost it a glance (runs/store.py). Lost on a restart or a failed round, and
    renewed every SWEEP_SECONDS: the round then looks at every action, which catches what this replica was not
    told of (another replica's work on the run)."""

    swept_at: float
    # Monotonic time at which each action looked at is due again (inf: when woken).
    at: dict[str, float] = field(default_factory=dict)
    woken: set[str] = field(default_factory=set)
    # Parents that had unfinished children, and the actions that were QUEUED, at the last round.
    waiting: set[str] = field(default_factory=set)
    queued: set[str] = field(default_factory=set)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def wake(self, name: str) -> None:
        with self.lock:
            self.woken.add(name)

    def due(self, glances: list[store.Glance], live: set[str], waiting: set[str], clock: float) -> set[str]:
        """The actions a round must look at: new ones, woken ones, those whose time came, those being aborted or
        whose parent ended, parents whose children started or all ended, and, when one of the QUEUED ones was woken
        (a task slot freed: the plugin wakes one waiter of a run), all the QUEUED ones."""
        with self.lock:
            woken, self.woken = self.woken, set()
        room = bool(woken & self.queued)
        return {g.name for g in glances
                if g.name not in self.at or g.name in woken or self.at[g.name] <= clock or g.aborting
                or (g.parent and g.parent not in live) or (g.name in waiting) != (g.name in self.waiting)
                or (room and g.name in self.queued)}

    def looked(self, action: Action, after: float | None, clock: float) -> None:
        """Note a look at `action` that asked for another `after` seconds (None: when woken)."""
        if action.done:
            self.at.pop(action.name, None)
            self.queued.discard(action.name)
            return
        self.at[action.name] = math.inf if after is None else clock + after
        if action.phase == Phase.ACTION_PHASE_QUEUED:
            self.queued.add(action.name)
        else:
            self.queued.discard(action.name)

    def soonest(self, live: set[str], clock: float) -> float | None:
        """Seconds until the first live action is due (None: when something wakes the run), forgetting the
        actions that ended elsewhere."""
        for name in [n for n in self.at if n not in live]:
            del self.at[name]
            self.queued.discard(name)
        first = min(self.at.values(), default=math.inf)
        first = min(first, self.swept_at + SWEEP_SECONDS)
        return max(first - clock, 0.0) if first != math.inf else None


@dataclass
class RunRound:
    done: bool
    # Seconds until the run needs another look (None: only when something wakes it; 0: at once).
    requeue_after: float | None


class RunExecutor:
    def __init__(self, ctx: Context, plugins: PluginRegistry, wake: Callable[[ExecutionKey, float | None], None],
                 may_launch: Callable[[ExecutionKey], bool],
                 persist: Callable[[ExecutionKey, str, bool, Session], None]):
        """`persist(key, status, done, session)` writes the run's FlyteWorkflow row with the lease's fence (raising
        LeaseLost when another replica holds it); `may_launch(key)` says whether a process may start now."""
        self.ctx, self.plugins, self.wake, self.may_launch, self.persist = ctx, plugins, wake, may_launch, persist
        # Unfinished actions' specs and templates, read once per action (they never change).
        self._specs: dict[tuple[str, str, str, str], tuple[run_definition_pb2.ActionSpec, tasks_pb2.TaskTemplate]] = {}
        # What the rounds of each run this replica drives remember between them.
        self._memos: dict[ExecutionKey, Memo] = {}

    def handle(self, key: ExecutionKey, spec_json: str, abort_cause: str | None) -> RunRound:
        try:
            return self._round(key, ExecutionSpec.from_json(spec_json), abort_cause)
        except BaseException:
            self._memos.pop(key, None)  # the next round looks at every action (this one's looks may not be saved)
            raise

    def _round(self, key: ExecutionKey, spec: ExecutionSpec, abort_cause: str | None) -> RunRound:
        clock = time.monotonic()
        memo = self._memos.get(key)
        # A run of few unfinished actions is read whole at once; a larger one glanced at, then read as due.
        rows = store.unfinished(self.ctx, key) if memo is None or len(memo.at) <= READ_WHOLE else None
        glances = ([store.Glance(a.name, a.parent, a.abort_reason is not None) for a in rows] if rows is not None
                   else store.glance(self.ctx, key))
        live = {g.name for g in glances}
        # Parents whose processes wait on children still running: their task slots are the children's meanwhile.
        waiting = {g.parent for g in glances if g.parent}
        if memo is None or abort_cause is not None or clock - memo.swept_at >= SWEEP_SECONDS:
            memo = self._memos[key] = Memo(swept_at=clock)
            due = live
        else:
            due = memo.due(glances, live, waiting, clock)
        if rows is not None:
            actions = [a for a in rows if a.name in due]
        else:
            actions = store.unfinished(self.ctx, key, None if due == live else due)
        changed: list[Action] = []
        now = self.ctx.clock.now()
        look = Look()
        for action in actions:
            name = action.name
            reason = abort_cause or action.abort_reason or (
                f"its parent action {action.parent!r} ended" if action.parent and action.parent not in live else None)
            if reason is None and look.no_room and name in memo.queued:
                memo.at[name] = clock + NO_ROOM_SECONDS  # an earlier one found no task slot: neither would this one
                continue
            before = (action.phase, action.state_json, action.attempts, action.done)
            state = json.loads(action.state_json)
            after: float | None = 0.0
            if reason is not None:
                self._abort(key, spec, action, state, reason, now)
            else:
                after = self._advance(key, spec, action, state, now, name in waiting, look)
            action.state_json = json.dumps(state, sort_keys=True)
            if (action.phase, action.state_json, action.attempts, action.done) != before:
                action.updated_at = now
                changed.append(action)
                after = 0.0 if not action.done else after
            memo.looked(action, after, clock)
            if action.done:
                self._specs.pop((key[0], key[1], key[2], name), None)
        with self.ctx.db.session() as session:
            store.save(session, changed)
            # A child enqueued since the round read the run keeps it going (its parent having ended, it is aborted).
            done = live <= {a.name for a in actions if a.done} and not store.any_unfinished(session, key)
            self.persist(key, "{}", done, session)
        if changed:
            self.ctx.run_updates.publish(key)
        if done:
            self._memos.pop(key, None)
            return RunRound(done=True, requeue_after=None)
        memo.waiting = waiting
        return RunRound(done=False, requeue_after=memo.soonest(live, clock))

    def _woken(self, key: ExecutionKey, name: str, delay: float | None) -> None:
        """An action's plugin asks for a look (its process ended, ...): it is due in the run's next round."""
        memo = self._memos.get(key)
        if memo is not None:
            memo.wake(name)
        self.wake(key, delay)

    def record_failed_round(self, session: Session, key: ExecutionKey, row, error: BaseException, limit: int) -> bool:
        """Count a round of the run that raised (in `row`, its FlyteWorkflow row, in `session`); the `limit`th
        fails its unfinished actions. True if it did."""
        counts = json.loads(row.status_json or "{}")
        counts["failed_rounds"] = failed = counts.get("failed_rounds", 0) + 1
        row.status_json, row.updated_at = json.dumps(counts), self.ctx.clock.now()
        if failed < limit:
            return False
        now = self.ctx.clock.now()
        for action in store.unfinished(self.ctx, key):
            state = json.loads(action.state_json)
            self._end(action, state, Phase.ACTION_PHASE_FAILED, now, ErrorInfo(
                E.ENGINE_ERROR, f"flytelite failed to evaluate run {'/'.join(key)} {failed} times; last error: "
                f"{error}", SYSTEM))
            action.state_json, action.updated_at = json.dumps(state, sort_keys=True), now
            store.save(session, [action])
        row.done = True
        self.ctx.run_updates.publish(key)
        return True

    # -- one action --------------------------------------------------------------------------------------
    def _advance(self, key: ExecutionKey, spec: ExecutionSpec, action: Action, state: dict, now: datetime,
                 waiting: bool, look: Look) -> float | None:
        """Move a task action on (`waiting`: it has children still running; `look`: what the round learnt so
        far); returns when to look again (None: when woken)."""
        if action.kind != "task":
            self._end(action, state, Phase.ACTION_PHASE_FAILED, now, ErrorInfo(
                E.NODE_KIND_NOT_SUPPORTED, f"action {action.name} is a {action.kind}, which flytelite does not run yet",
                USER))
            return None
        task = self._template(key, action)
        try:
            plugin = self._plugin(task, key)
        except PluginNotFound as e:
            self._end(action, state, Phase.ACTION_PHASE_FAILED, now, ErrorInfo(E.UNSUPPORTED_TASK_TYPE, str(e), USER))
            return None
        if action.attempts == 0:
            action.attempts = 1
        tctx = self._context(key, spec, action, state, task)
        backoff = parse_iso(state.get("queued_at"))
        backoff_left = (backoff - now).total_seconds() if backoff is not None else 0.0
        cache, check = (None, None) if backoff_left > 0 else self._ask_cache(key, spec, action, state, task, tctx, now)
        if action.done:  # the cache answered
            return None
        if backoff_left > 0:
            info = PluginPhaseInfo(PluginPhase.QUEUED, poll_after=backoff_left)
        elif check is not None and check.action == CacheAction.WAIT:  # another action computes the same outputs
            info = PluginPhaseInfo(PluginPhase.QUEUED, poll_after=check.recheck_after)
        else:
            info = plugin.handle(tctx)
            look.no_room = look.no_room or info.no_room
        state["logs"] = [{"uri": log.uri, "name": log.name} for log in info.logs] or state.get("logs", [])
        if info.phase in (PluginPhase.RUNNING, PluginPhase.SUCCESS) and action.started_at is None:
            action.started_at = now
        if info.phase == PluginPhase.SUCCESS:
            action.output_uri = tctx.output_prefix
            plugin.finalize(tctx)
            if cache is not None:
                cached = CacheState.from_dict(state.get("cache"))
                after_success(cache, cached)
                state["cache"] = cached.to_dict()
            self._end(action, state, Phase.ACTION_PHASE_SUCCEEDED, now, None)
            return None
        if info.phase.terminal:
            return self._failed(tctx, plugin, action, state, info, task, now)
        running = info.phase == PluginPhase.RUNNING
        if running:
            state.setdefault("running_at", iso(now))
        bounds = self._bounds(key, action, state, running)
        passed = sorted((b for b in bounds if b.at <= now), key=lambda b: not b.final)
        if passed:
            bound = passed[0]
            plugin.abort(tctx)
            timed_out = PluginPhaseInfo.failure(bound.code, bound.message, kind=USER, retryable=not bound.final)
            return self._failed(tctx, plugin, action, state, timed_out, task, now, timed_out=True)
        action.phase = _PHASES[info.phase]
        if running:
            plugin.waits_on_others(tctx, waiting)
        after = 0.0 if info.requeue_now else info.poll_after
        lefts = [(bound.at - now).total_seconds() for bound in bounds]
        if check is not None and check.recheck_after is not None:  # a held reservation's heartbeat
            lefts.append(check.recheck_after)
        for left in lefts:
            after = left if after is None else min(after, left)
        return after

    def _ask_cache(self, key: ExecutionKey, spec: ExecutionSpec, action: Action, state: dict,
                   task: tasks_pb2.TaskTemplate, tctx: TaskExecutionContext,
                   now: datetime) -> tuple[CacheRun | None, CacheCheck | None]:
        """Ask the catalog before the attempt runs, for a cached task: a hit ends the action SUCCEEDED (its outputs
        written), a task the catalog cannot key FAILED; else what to do (run, or wait for another action)."""
        cache = self._cache(key, spec, action, task, tctx)
        if cache is None:
            return None, None
        cached = CacheState.from_dict(state.get("cache"))
        try:
            check = before_run(cache, cached)
        except InvalidArgument as e:
            self._end(action, state, Phase.ACTION_PHASE_FAILED, now, ErrorInfo(E.BAD_TASK_SPECIFICATION, str(e), USER))
            return cache, None
        state["cache"] = cached.to_dict()
        if check.action == CacheAction.HIT:
            action.started_at, action.output_uri = action.started_at or now, tctx.output_prefix
            self._end(action, state, Phase.ACTION_PHASE_SUCCEEDED, now, None)
        return cache, check

    def _cache(self, key: ExecutionKey, spec: ExecutionSpec, action: Action, task: tasks_pb2.TaskTemplate,
               tctx: TaskExecutionContext) -> CacheRun | None:
        """The action's attempt as the catalog sees it, for a cached task (flyte.Cache): keyed as a Flyte 1 task's
        (its name, cache version, interface and inputs), so that a run's root and a child of the same task and
        inputs share an entry; None for a task that is not cached."""
        if not task.metadata.discoverable:
            return None
        template = tasks_pb2.TaskTemplate()
        template.CopyFrom(task)
        template.id.project, template.id.domain = key[0], key[1]
        input_uri = tctx.input_uri
        return CacheRun(ctx=self.ctx, task=template,
                        inputs=lambda: self.ctx.blobs.read_proto(input_uri, literals_pb2.LiteralMap),
                        outputs_uri=self.ctx.blobs.join(tctx.output_prefix, "outputs.pb"),
                        execution_id=identifier_pb2.WorkflowExecutionIdentifier(project=key[0], domain=key[1],
                                                                                name=key[2]),
                        node_id=action.name, attempt=tctx.attempt, overwrite=spec.overwrite_cache)

    def _release(self, key: ExecutionKey, spec: ExecutionSpec, action: Action, state: dict,
                 task: tasks_pb2.TaskTemplate, tctx: TaskExecutionContext) -> None:
        """Give up the cache reservation the attempt holds, if any (its attempt ended without outputs)."""
        cache = self._cache(key, spec, action, task, tctx)
        if cache is not None and "cache" in state:
            cached = CacheState.from_dict(state["cache"])
            release(cache, cached)
            state["cache"] = cached.to_dict()

    def _backoff(self, key: ExecutionKey, action: Action, state: dict) -> timedelta:
        """How long the next user retry waits (flyte.Backoff: the n-th retry, from 0, after min(base * factor**n,
        cap))."""
        backoff = self._spec(key, action)[0].task.spec.task_template.metadata.retries.backoff
        seconds = backoff.base.ToTimedelta().total_seconds() * max(backoff.factor, 1.0) ** (state["user_failures"] - 1)
        if backoff.HasField("cap"):
            seconds = min(seconds, backoff.cap.ToTimedelta().total_seconds())
        return timedelta(seconds=seconds)

    def _bounds(self, key: ExecutionKey, action: Action, state: dict, running: bool) -> list[Bound]:
        """The time bounds of the action's current attempt (see the module's docstring)."""
        created = store.created_at(action)
        metadata = self._spec(key, action)[0].task.spec.task_template.metadata
        bounds = []
        if metadata.timeouts.HasField("deadline"):
            limit = metadata.timeouts.deadline.ToTimedelta()
            bounds.append(Bound(created + limit, "DEADLINE_EXCEEDED",
                                f"action {action.name} did not end within its deadline of {_span(limit)}", True))
        if running and metadata.HasField("timeout") and metadata.timeout.ToTimedelta():
            limit = metadata.timeout.ToTimedelta()
            bounds.append(Bound((parse_iso(state.get("running_at")) or created) + limit, "MAX_RUNTIME_EXCEEDED",
                                f"attempt {action.attempts} of action {action.name} ran longer than its max_runtime "
                                f"of {_span(limit)}", False))
        if not running and metadata.timeouts.HasField("queued_timeout"):
            limit = metadata.timeouts.queued_timeout.ToTimedelta()
            bounds.append(Bound((parse_iso(state.get("queued_at")) or created) + limit, "QUEUED_TIMEOUT_EXCEEDED",
                                f"attempt {action.attempts} of action {action.name} waited longer than its "
                                f"max_queued_time of {_span(limit)} to start", False))
        return bounds

    def _failed(self, tctx: TaskExecutionContext, plugin: Plugin, action: Action, state: dict, info: PluginPhaseInfo,
                task: tasks_pb2.TaskTemplate, now: datetime, timed_out: bool = False) -> float | None:
        error = info.error or ErrorInfo(E.TASK_FAILED_WITH_ERROR, info.reason, USER)
        plugin.finalize(tctx)
        self._release(tctx.key, tctx.spec, action, state, task, tctx)
        counter = "system_failures" if error.kind == SYSTEM else "user_failures"
        state[counter] = state.get(counter, 0) + 1
        budget = (self.ctx.config.engine.max_system_retries if error.kind == SYSTEM
                  else task.metadata.retries.retries)
        phase = Phase.ACTION_PHASE_TIMED_OUT if timed_out else Phase.ACTION_PHASE_FAILED
        if info.phase == PluginPhase.RETRYABLE_FAILURE and state[counter] <= budget:
            state.setdefault("ended", []).append(_attempt_record(action, state, phase, error, now))
            action.attempts += 1
            delay = self._backoff(tctx.key, action, state) if error.kind == USER else timedelta(0)
            state["plugin"], state["logs"], state["queued_at"] = {}, [], iso(now + delay)
            state.pop("running_at", None)
            state.pop("cache", None)
            action.phase = Phase.ACTION_PHASE_QUEUED
            return 0.0
        self._end(action, state, phase, now, error)
        return None

    def _abort(self, key: ExecutionKey, spec: ExecutionSpec, action: Action, state: dict, reason: str,
               now: datetime) -> None:
        if action.kind == "task" and action.attempts:
            task = self._template(key, action)
            try:
                plugin = self._plugin(task, key)
            except PluginNotFound:
                plugin = None
            if plugin is not None:
                tctx = self._context(key, spec, action, state, task)
                plugin.abort(tctx)
                plugin.finalize(tctx)
                self._release(key, spec, action, state, task, tctx)
        self._end(action, state, Phase.ACTION_PHASE_ABORTED, now, ErrorInfo(E.TASK_ABORTED, reason, USER))

    def _end(self, action: Action, state: dict, phase: int, now: datetime, error: ErrorInfo | None) -> None:
        action.phase, action.done, action.ended_at = phase, True, now
        if error is not None:
            action.error_pb = run_definition_pb2.ErrorInfo(
                code=error.code, message=error.message,
                kind=as_enum(run_definition_pb2.ErrorInfo.Kind, error.kind)).SerializeToString()
        if action.attempts:
            state.setdefault("ended", []).append(_attempt_record(action, state, phase, error, now))
        if "cache" in state:
            state["cache_status"] = CacheState.from_dict(state.pop("cache")).status
        for transient in ("plugin", "logs", "queued_at", "running_at"):
            state.pop(transient, None)

    # -- what an attempt is given ---------------------------------------------------------------------------
    def _spec(self, key: ExecutionKey, action: Action) -> tuple[run_definition_pb2.ActionSpec, tasks_pb2.TaskTemplate]:
        """The action's spec, and its task's template read as flyteidl's."""
        cached = self._specs.get((key[0], key[1], key[2], action.name))
        if cached is None:
            spec = store.spec(action)
            cached = spec, tasks_pb2.TaskTemplate.FromString(spec.task.spec.task_template.SerializeToString())
            self._specs[(key[0], key[1], key[2], action.name)] = cached
        return cached

    def _template(self, key: ExecutionKey, action: Action) -> tasks_pb2.TaskTemplate:
        return self._spec(key, action)[1]

    def _plugin(self, task: tasks_pb2.TaskTemplate, key: ExecutionKey) -> Plugin:
        if task.type not in TASK_TYPES:
            raise PluginNotFound(f"task {task.id.name} is of type {task.type!r}; flytelite runs Flyte 2 tasks of "
                                 f"types {', '.join(TASK_TYPES)} only, for now")
        return self.plugins.get(task, key)

    def _context(self, key: ExecutionKey, spec: ExecutionSpec, action: Action, state: dict,
                 task: tasks_pb2.TaskTemplate) -> TaskExecutionContext:
        action_spec = self._spec(key, action)[0]
        attempt = max(action.attempts, 1)
        run_start = action_spec.run_spec.run_start_time
        return TaskExecutionContext(
            ctx=self.ctx, key=key, spec=spec, workflow_id=identifier_pb2.Identifier(), node_id=action.name,
            attempt=attempt - 1, task=task, input_uri=action_spec.input_uri,
            output_prefix=store.attempt_prefix(self.ctx, key, action.name, attempt),
            state=state.setdefault("plugin", {}), wake=lambda delay: self._woken(key, action.name, delay),
            may_launch=lambda: self.may_launch(key),
            template_vars={"runName": key[2], "actionName": action.name,
                           "runStartTime": run_start.ToJsonString() if run_start.seconds else ""},
        )


def _span(limit: timedelta) -> str:
    seconds = limit.total_seconds()
    return f"{seconds:g}s" if seconds < 120 else str(limit)


def _attempt_record(action: Action, state: dict, phase: int, error: ErrorInfo | None, now: datetime) -> dict:
    record = {"attempt": action.attempts, "phase": phase, "ended_at": now.isoformat(),
              "logs": state.get("logs", [])}
    if error is not None:
        record["error"] = {"code": error.code, "message": error.message, "kind": error.kind}
    return record
