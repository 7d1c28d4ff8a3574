"""RunService's watch streams of many actions, for consoles and dashboards (the `flyte` SDK itself watches one
action or a parent's children, connect/runs.py): WatchRuns (a project's runs, or a task's, as they change),
WatchActions (a run's actions as they change, each with its children's phases counted) and WatchGroups (a
project's runs grouped by their task, with counts, failure rate and recent phases).

Each sends what there is, then what changed each time the runs/updates.py hub wakes it (or its poll finds a
change another replica made), until the client leaves or the server stops. A change is found by the rows'
`updated_at`, so a wake-up reads only what changed since the last.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import AsyncIterator, Iterable
from datetime import datetime, timezone

from flyteidl2.workflow import run_definition_pb2, run_service_pb2
from starlette.concurrency import run_in_threadpool

from flytelite.connect import details
from flytelite.context import Context, ExecutionKey
from flytelite.errors import InvalidArgument, NotFound, Unimplemented
from flytelite.runs import store
from flytelite.runs.store import Phase
from flytelite.store.db import as_utc
from flytelite.store.models import Action

# Runs sent when a WatchRuns stream opens (the newest), and runs a WatchGroups stream groups (the newest).
FIRST_RUNS = 100
GROUPED_RUNS = 1000
# Phases of a task group's most recent runs.
RECENT = 10


class _Changes:
    """Rows seen by a stream: which of a fresh read are new or changed since they were sent."""

    def __init__(self) -> None:
        self.since: datetime | None = None
        self._at_since: dict[tuple[str, ...], datetime] = {}

    def fresh(self, rows: Iterable[Action]) -> list[Action]:
        found = [r for r in rows if self._at_since.get(_key(r)) != r.updated_at]
        newest = max((r.updated_at for r in found), default=None)
        if newest is not None and (self.since is None or newest > self.since):
            self.since = newest
            self._at_since = {}
        # Rows at the newest time are read again next time (>=): those already sent are skipped.
        self._at_since.update({_key(r): r.updated_at for r in found if r.updated_at == self.since})
        return found


async def watch_runs(ctx: Context, request: run_service_pb2.WatchRunsRequest
                     ) -> AsyncIterator[run_service_pb2.WatchRunsResponse]:
    target = request.WhichOneof("target")
    project = domain = ""
    task = None
    if target == "project_id":
        project, domain = request.project_id.name, request.project_id.domain
        if not project or not domain:
            raise InvalidArgument("WatchRuns: project_id needs its name and domain")
    elif target == "task_id":
        task = request.task_id
        project, domain = task.project, task.domain
        if not project or not domain or not task.name:
            raise InvalidArgument("WatchRuns: task_id needs its project, domain and name")
    # org or cluster_id: this server is one cluster of one organization, so every run.
    org = request.org or request.project_id.organization

    def matches(row: Action) -> bool:
        if task is None:
            return True
        ran = store.spec(row).task.id
        return ran.name == task.name and (not task.version or ran.version == task.version)

    changes = _Changes()
    scope = (project, domain) if project else ()
    async with ctx.run_updates.watching(scope) as watch:
        rows = await run_in_threadpool(store.roots, ctx, project, domain, newest=FIRST_RUNS)
        while True:
            runs = [details.run(r, org) for r in changes.fresh(rows) if matches(r)]
            if runs:
                yield run_service_pb2.WatchRunsResponse(runs=runs)
            if not await watch.changed():
                return
            rows = await run_in_threadpool(store.roots, ctx, project, domain, updated_since=changes.since)


async def watch_actions(ctx: Context, request: run_service_pb2.WatchActionsRequest
                        ) -> AsyncIterator[run_service_pb2.WatchActionsResponse]:
    run = request.run_id
    if not run.project or not run.domain or not run.name:
        raise InvalidArgument("WatchActions needs run_id's project, domain and name")
    if request.filter:
        raise Unimplemented(f"WatchActions does not filter yet (asked: {', '.join(f.field for f in request.filter)}); "
                            "watch without filters")
    key = ExecutionKey(run.project, run.domain, run.name)
    changes = _Changes()
    # Every action seen, for its children's phases (a child's change changes its parent's counts).
    seen: dict[str, Action] = {}
    async with ctx.run_updates.watching(key) as watch:
        rows = await run_in_threadpool(store.run_actions, ctx, key)
        if not rows:
            raise NotFound(f"there is no run {key[2]} in project {key[0]}, domain {key[1]}")
        while True:
            fresh = changes.fresh(rows)
            seen.update({r.name: r for r in fresh})
            touched = {r.name for r in fresh} | {r.parent for r in fresh if r.parent in seen}
            if touched:
                counts: dict[str, Counter] = {}
                for row in seen.values():
                    if row.parent:
                        counts.setdefault(row.parent, Counter())[row.phase] += 1
                ordered = sorted((seen[n] for n in touched), key=lambda r: (r.created_at, r.name))
                yield run_service_pb2.WatchActionsResponse(enriched_actions=[
                    run_definition_pb2.EnrichedAction(action=details.action(r, run.org), meets_filter=True,
                                                      children_phase_counts=dict(counts.get(r.name, {})))
                    for r in ordered])
            if not await watch.changed():
                return
            rows = await run_in_threadpool(store.run_actions, ctx, key, changes.since)


async def watch_groups(ctx: Context, request: run_service_pb2.WatchGroupsRequest
                       ) -> AsyncIterator[run_service_pb2.WatchGroupsResponse]:
    project, domain = request.project_id.name, request.project_id.domain
    if not project or not domain:
        raise InvalidArgument("WatchGroups needs project_id's name and domain")
    if request.request.filters or request.request.raw_filters:
        raise Unimplemented("WatchGroups does not filter yet; watch without filters")
    created_from = _utc(request.start_date) if request.HasField("start_date") else None
    created_to = _utc(request.end_date) if request.HasField("end_date") else None
    last: list[run_definition_pb2.TaskGroup] | None = None
    async with ctx.run_updates.watching((project, domain)) as watch:
        while True:
            rows = await run_in_threadpool(store.roots, ctx, project, domain, created_from=created_from,
                                           created_to=created_to, newest=GROUPED_RUNS)
            groups = task_groups(rows)
            if groups != last:
                last = groups
                yield run_service_pb2.WatchGroupsResponse(task_groups=groups, sentinel=True)
            # A period that has ended is history: one answer.
            if request.HasField("end_date") or not await watch.changed():
                return


def task_groups(rows: list[Action]) -> list[run_definition_pb2.TaskGroup]:
    """Runs grouped by their root task's name: counts by phase, failure rate, mean duration of those that
    ended, and the most recent runs' phases (rows: the runs, newest first)."""
    groups: dict[str, list[tuple[Action, run_definition_pb2.ActionSpec]]] = {}
    for row in rows:
        spec = store.spec(row)
        groups.setdefault(spec.task.id.name or row.name, []).append((row, spec))
    found = []
    for name, runs in sorted(groups.items()):
        spec = runs[0][1]
        phases = Counter(row.phase for row, _ in runs)
        errors = Counter(details.error_info(row).kind for row, _ in runs if row.error_pb)  # type: ignore[union-attr]
        group = run_definition_pb2.TaskGroup(
            task_name=name, environment_name=spec.task.spec.environment.name,
            short_name=spec.task.spec.short_name or name.rsplit(".", 1)[-1], total_runs=len(runs),
            average_failure_rate=phases[Phase.ACTION_PHASE_FAILED] / len(runs),
            recent_statuses=[run_definition_pb2.TaskGroup.RecentStatus(run_name=row.run_name, phase=Phase.Name(row.phase))
                             for row, _ in runs[:RECENT]],
            phase_counts=[run_definition_pb2.TaskGroup.PhaseCounts(phase=Phase.Name(phase), count=count)
                          for phase, count in sorted(phases.items())],
            error_counts=run_definition_pb2.TaskGroup.ErrorCounts(
                user_error=errors[run_definition_pb2.ErrorInfo.KIND_USER],
                system_error=errors[run_definition_pb2.ErrorInfo.KIND_SYSTEM],
                unspecified_error=errors[run_definition_pb2.ErrorInfo.KIND_UNSPECIFIED]))
        group.latest_run_time.FromDatetime(store.created_at(runs[0][0]))
        ended = [(as_utc(row.ended_at), as_utc(row.started_at or row.created_at)) for row, _ in runs
                 if row.ended_at is not None]
        if ended:
            group.latest_finished_time.FromDatetime(max(end for end, _ in ended))
            spans = [(end - start).total_seconds() for end, start in ended]
            group.average_duration.FromNanoseconds(int(sum(spans) / len(spans) * 1e9))
        found.append(group)
    return found


def _key(row: Action) -> tuple[str, ...]:
    return (row.project, row.domain, row.run_name, row.name)


def _utc(timestamp) -> datetime:
    return timestamp.ToDatetime(tzinfo=timezone.utc)

