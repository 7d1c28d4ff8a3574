"""The executions list (search; filters by phase, workflow, launch plan, tag, time range, duration and archived;
sortable; pages; live), the schedules page and the audit trail.

Filters become FlyteAdmin filter expressions (`eq(phase,RUNNING)+gte(created_at,...)`),
run by the same ListExecutions the APIs serve; paging uses its tokens. The
list keeps refreshing itself (a `data-live` region) so new runs and phase
changes show up without a reload.
"""

from __future__ import annotations

import re
from datetime import datetime, timedelta, timezone

from flyteidl.admin import common_pb2, execution_pb2
from starlette.datastructures import QueryParams

from flytelite.console.entity_pages import executions_table, known_project
from flytelite.console.layout import entity_url, esc, fmt_time, layout, project_url, table
from flytelite.context import CALLER, Context
from flytelite.errors import InvalidArgument
from flytelite.idl.phases import WorkflowPhase
from flytelite.idl.schedules import parse_schedule, slots
from flytelite.scheduler.progress import scheduled_plans

PAGE_SIZE = 25
SORTABLE = ("created_at", "duration", "name")
# What the search box looks in (FlyteAdmin's filter fields).
SEARCHED = ("name", "workflow.name", "launch_plan.name", "task.name", "execution_tag.key", "execution_tag.value")
PHASES = [n for n in WorkflowPhase.keys() if n != "UNDEFINED"]


def execution_filters(params: QueryParams, me: str = "") -> str:
    """FlyteAdmin filter text for the list's form fields (phase, workflow, launch plan, tag or label, launched by
    or only mine (`me`, the signed-in user), from, to, shortest duration, archived)."""
    parts = []
    launched_by = me if params.get("mine") else params.get("launched_by", "").strip()
    if params.get("mine") and not me:
        raise InvalidArgument("only mine needs a signed-in user: without authentication no one is signed in")
    if launched_by:
        parts.append(f"eq(user,{launched_by})")
    if params.get("phase"):
        parts.append(f"eq(phase,{params['phase']})")
    for key, field in (("workflow", "workflow.name"), ("launch_plan", "launch_plan.name")):
        if params.get(key):
            parts.append(f"eq({field},{params[key].strip()})")
    if params.get("tag"):
        # A tag, or a label as key=value: one of the execution's tag rows must match (FlyteAdmin's execution_tag).
        key, _, value = params["tag"].strip().partition("=")
        parts.append(f"eq(execution_tag.key,{key.strip()})")
        if value:
            parts.append(f"eq(execution_tag.value,{value.strip()})")
    for key, op in (("from", "gte"), ("to", "lte")):
        if params.get(key):
            parts.append(f"{op}(created_at,{_utc(params[key], key)})")
    if params.get("min_duration"):
        parts.append(f"gte(duration,{_seconds(params['min_duration'])})")
    if params.get("archived"):
        # FlyteAdmin's lists leave archived executions out unless a filter names the state.
        parts.append("eq(state,EXECUTION_ARCHIVED)")
    return "+".join(parts)


def _seconds(text: str) -> int:
    """A duration typed as 90, 90s, 5m or 2h, in seconds."""
    match = re.fullmatch(r"\s*(\d+)\s*([smh]?)\s*", text)
    if match is None:
        raise InvalidArgument(f"the shortest duration must be a number of seconds, or minutes or hours like 5m or "
                              f"2h, got {text!r}")
    return int(match[1]) * {"": 1, "s": 1, "m": 60, "h": 3600}[match[2]]


def _utc(text: str, key: str) -> str:
    try:
        dt = datetime.fromisoformat(text.strip().replace("Z", "+00:00"))
    except ValueError:
        raise InvalidArgument(f"{key!r} must be a date and time like 2026-01-31T12:00, got {text!r}") from None
    return (dt if dt.tzinfo else dt.replace(tzinfo=timezone.utc)).astimezone(timezone.utc).strftime(
        "%Y-%m-%dT%H:%M:%SZ")


def _sort(params: QueryParams) -> common_pb2.Sort:
    key, direction = params.get("sort", "") or "created_at", params.get("dir", "") or "desc"
    if key not in SORTABLE or direction not in ("asc", "desc"):
        raise InvalidArgument(f"the list sorts by {', '.join(SORTABLE)}, asc or desc; got {key!r} {direction!r}")
    return common_pb2.Sort(key=key, direction=common_pb2.Sort.ASCENDING if direction == "asc"
                           else common_pb2.Sort.DESCENDING)


def _search(admin, project: str, domain: str, filters: str, text: str, sort: common_pb2.Sort, page: int):
    """One page of the executions whose name, workflow, launch plan, task, tags or labels contain `text`
    (with `filters`), and whether there are more: FlyteAdmin's filters are all met at once, so each field is
    asked for on its own and the answers merged."""
    if re.search(r"[(),+;]", text):
        raise InvalidArgument(f"search for text without parentheses, commas, plus signs or semicolons; got {text!r}")
    found: dict[str, execution_pb2.Execution] = {}
    for field in SEARCHED:
        listed = admin.ListExecutions(common_pb2.ResourceListRequest(
            id=common_pb2.NamedEntityIdentifier(project=project, domain=domain),
            filters="+".join(f for f in (filters, f"contains({field},{text})") if f),
            limit=(page + 1) * PAGE_SIZE + 1, sort_by=sort), None)
        for e in listed.executions:
            found.setdefault(e.id.name, e)
    order = {"name": lambda e: e.id.name, "created_at": lambda e: e.closure.created_at.ToNanoseconds(),
             "duration": lambda e: e.closure.duration.ToNanoseconds()}[sort.key]
    ranked = sorted(found.values(), key=order, reverse=sort.direction == common_pb2.Sort.DESCENDING)
    return ranked[page * PAGE_SIZE:(page + 1) * PAGE_SIZE], len(ranked) > (page + 1) * PAGE_SIZE


def executions_page(admin, project: str, domain: str, params: QueryParams) -> str:
    known_project(admin, project)
    problem = ""
    executions: list[execution_pb2.Execution] = []
    token, more, page = "", False, 0
    try:
        caller = CALLER.get()
        filters, sort = execution_filters(params, caller.name if caller is not None else ""), _sort(params)
        if params.get("q", "").strip():
            page = int(params["page"]) if params.get("page", "").isdigit() else 0
            executions, more = _search(admin, project, domain, filters, params["q"].strip(), sort, page)
        else:
            listed = admin.ListExecutions(common_pb2.ResourceListRequest(
                id=common_pb2.NamedEntityIdentifier(project=project, domain=domain), filters=filters,
                limit=PAGE_SIZE, token=params.get("token", ""), sort_by=sort), None)
            executions, token = list(listed.executions), listed.token
    except InvalidArgument as exc:
        problem = str(exc)
    pager = []
    if params.get("token") or page:
        pager.append(f"<a href='{esc(_with(project, domain, params, token='', page=''))}'>First page</a>")
    if token or more:
        pager.append(f"<a class='next' href='{esc(_with(project, domain, params, token=token, page=str(page + 1) if more else ''))}'>"
                     "Next page</a>")

    def heading(column: str, key: str) -> str:
        current = params.get("sort", "") or "created_at"
        ascending = (params.get("dir", "") or "desc") == "asc"
        flip = "desc" if key == current and ascending else "asc" if key == current else "desc"
        mark = (" ▲" if ascending else " ▼") if key == current else ""
        href = _with(project, domain, params, sort=key, dir=flip, token="", page="")
        return f"<th><a class='sort' data-sort='{key}' href='{esc(href)}'>{esc(column)}{mark}</a></th>"

    rows = executions_table(executions, heading)
    error = f"<div class='notice bad'>{esc(problem)}</div>" if problem else ""
    archived = " <span class='tag'>archived</span>" if params.get("archived") else ""
    body = (f"<h1>Executions{archived} <span class='muted'>{esc(project)} / {esc(domain)}</span></h1>"
            f"{_filter_form(domain, params)}{error}"
            f"<div id='content' data-poll='1'><div id='executions' data-live>{rows}"
            f"<div class='pager'>{''.join(pager)}</div></div></div>")
    return layout("Executions", body, project, domain)


def _with(project: str, domain: str, params: QueryParams, **changes: str) -> str:
    keep = {k: v for k, v in params.items() if k not in ("domain", *changes)}
    keep.update({k: v for k, v in changes.items() if v})
    return project_url(project, "executions", domain, **keep)


def _filter_form(domain: str, params: QueryParams) -> str:
    phase = params.get("phase", "")
    options = "<option value=''>any</option>" + "".join(
        f"<option{' selected' if p == phase else ''}>{p}</option>" for p in PHASES)

    def text(name: str, label: str, hint: str, kind: str = "text") -> str:
        return (f"<label>{label}<input type='{kind}' name='{name}' value='{esc(params.get(name, ''))}' "
                f"placeholder='{esc(hint)}'></label>")

    kept = "".join(f"<input type='hidden' name='{k}' value='{esc(params.get(k, ''))}'>" for k in ("sort", "dir")
                   if params.get(k))
    return ("<form class='filters' method='get'>"
            f"<input type='hidden' name='domain' value='{esc(domain)}'>{kept}"
            + text("q", "Search", "name, workflow, launch plan, tag")
            + f"<label>Phase<select name='phase'>{options}</select></label>"
            + text("workflow", "Workflow", "name") + text("launch_plan", "Launch plan", "name")
            + text("tag", "Tag or label", "tag or key=value") + text("launched_by", "Launched by", "user")
            + (f"<label>Only mine<input type='checkbox' name='mine' value='1'{' checked' if params.get('mine') else ''}>"
               "</label>" if CALLER.get() is not None else "")
            + text("min_duration", "Lasting at least", "90, 5m, 2h")
            + text("from", "From (UTC)", "", "datetime-local") + text("to", "To (UTC)", "", "datetime-local")
            + f"<label>Archived<input type='checkbox' name='archived' value='1'"
              f"{' checked' if params.get('archived') else ''}></label>"
            "<button type='submit'>Filter</button></form>")


def schedules_page(admin, ctx: Context, project: str, domain: str) -> str:
    """Active launch plans with a schedule in this project/domain, and when each runs next."""
    known_project(admin, project)
    now = ctx.clock.now()
    rows = []
    for plan in scheduled_plans(ctx):
        ident = plan.id
        if (ident.project, ident.domain) != (project, domain):
            continue
        try:
            cadence = parse_schedule(plan.schedule)
            upcoming = slots(cadence, plan.activated_at, max(now, plan.activated_at), now + timedelta(days=366), 1)
            nxt, what = (upcoming[0] if upcoming else None), cadence.describe()
        except InvalidArgument as exc:
            nxt, what = None, f"cannot run: {exc}"
        rows.append(f"<tr data-schedule='{esc(ident.name)}'><td><a href='{esc(entity_url('launch_plan', project, domain, ident.name, ident.version))}'>"
                    f"{esc(ident.name)}</a></td><td>{esc(ident.version)}</td><td>{esc(what)}</td>"
                    f"<td>{fmt_time(plan.last_slot_at)}</td><td class='next-run'>{fmt_time(nxt)}</td></tr>")
    body = (f"<h1>Schedules <span class='muted'>{esc(project)} / {esc(domain)}</span></h1>"
            + table(["Launch plan", "Version", "Schedule", "Last run", "Next run"], rows,
                    "No active launch plan with a schedule. Activate one (pyflyte register --activate-launchplans)."))
    return layout("Schedules", body, project, domain)



def audit_page(events: list) -> str:
    """The audit trail, newest first (admin/audit.py): who changed what, from where, and how it ended."""
    rows = [f"<tr data-audit='{esc(e.action)}' data-outcome='{esc(e.outcome)}'><td>{fmt_time(e.at)}</td>"
            f"<td>{esc(e.identity or '-')}{f' <span class=muted>({esc(e.client_id)})</span>' if e.client_id else ''}</td>"
            f"<td>{esc(e.address)}</td><td>{esc(e.action)}</td><td>{esc('/'.join(p for p in (e.project, e.domain) if p))}</td>"
            f"<td>{esc(e.resource)}</td><td>{esc(e.outcome)}</td><td class='muted'>{esc(e.message)}</td></tr>"
            for e in events]
    body = ("<h1>Audit trail</h1><p class='muted'>Calls that changed something or tried to, newest first "
            "(<code>flytelite audit</code> lists them too).</p>"
            + table(["Time", "Who", "From", "Action", "Project", "What", "Outcome", "Message"], rows,
                    "Nothing changed yet.", "audit"))
    return layout("Audit trail", body)
