"""The executions list (filters by phase, workflow and time range; pages; live) and the schedules page.

Filters become FlyteAdmin filter expressions (`eq(phase,RUNNING)+gte(created_at,...)`),
run by the same ListExecutions the APIs serve; paging uses its tokens. The
list keeps refreshing itself (a `data-live` region) so new runs and phase
changes show up without a reload.
"""

from __future__ import annotations

from datetime import datetime, timedelta, timezone

from flyteidl.admin import common_pb2
from starlette.datastructures import QueryParams

from flytelite.console.entity_pages import DESC, executions_table, known_project
from flytelite.console.layout import entity_url, esc, fmt_time, layout, project_url, table
from flytelite.context import Context
from flytelite.errors import InvalidArgument
from flytelite.idl.phases import WorkflowPhase
from flytelite.idl.schedules import parse_schedule, slots
from flytelite.scheduler.progress import scheduled_plans

PAGE_SIZE = 25
PHASES = [n for n in WorkflowPhase.keys() if n != "UNDEFINED"]


def execution_filters(params: QueryParams) -> str:
    """FlyteAdmin filter text for the list's form fields (phase, workflow, tag or label, from, to)."""
    parts = []
    if params.get("phase"):
        parts.append(f"eq(phase,{params['phase']})")
    if params.get("workflow"):
        parts.append(f"eq(workflow.name,{params['workflow']})")
    if params.get("tag"):
        # A tag, or a label as key=value: one of the execution's tag rows must match (FlyteAdmin's execution_tag).
        key, _, value = params["tag"].strip().partition("=")
        parts.append(f"eq(execution_tag.key,{key.strip()})")
        if value:
            parts.append(f"eq(execution_tag.value,{value.strip()})")
    for key, op in (("from", "gte"), ("to", "lte")):
        if params.get(key):
            parts.append(f"{op}(created_at,{_utc(params[key], key)})")
    return "+".join(parts)


def _utc(text: str, key: str) -> str:
    try:
        dt = datetime.fromisoformat(text.strip().replace("Z", "+00:00"))
    except ValueError:
        raise InvalidArgument(f"{key!r} must be a date and time like 2026-01-31T12:00, got {text!r}") from None
    return (dt if dt.tzinfo else dt.replace(tzinfo=timezone.utc)).astimezone(timezone.utc).strftime(
        "%Y-%m-%dT%H:%M:%SZ")


def executions_page(admin, project: str, domain: str, params: QueryParams) -> str:
    known_project(admin, project)
    problem = ""
    try:
        filters = execution_filters(params)
        listed = admin.ListExecutions(common_pb2.ResourceListRequest(
            id=common_pb2.NamedEntityIdentifier(project=project, domain=domain), filters=filters, limit=PAGE_SIZE,
            token=params.get("token", ""), sort_by=DESC), None)
        executions, token = list(listed.executions), listed.token
    except InvalidArgument as exc:
        problem, executions, token = str(exc), [], ""
    pager = []
    if params.get("token"):
        pager.append(f"<a href='{esc(_with(project, domain, params, token=''))}'>First page</a>")
    if token:
        pager.append(f"<a class='next' href='{esc(_with(project, domain, params, token=token))}'>Next page</a>")
    rows = executions_table(executions)
    error = f"<div class='notice bad'>{esc(problem)}</div>" if problem else ""
    body = (f"<h1>Executions <span class='muted'>{esc(project)} / {esc(domain)}</span></h1>"
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
    return ("<form class='filters' method='get'>"
            f"<input type='hidden' name='domain' value='{esc(domain)}'>"
            f"<label>Phase<select name='phase'>{options}</select></label>"
            f"<label>Workflow<input name='workflow' value='{esc(params.get('workflow', ''))}' placeholder='name'></label>"
            f"<label>Tag or label<input name='tag' value='{esc(params.get('tag', ''))}' placeholder='tag or key=value'>"
            "</label>"
            f"<label>From (UTC)<input type='datetime-local' name='from' value='{esc(params.get('from', ''))}'></label>"
            f"<label>To (UTC)<input type='datetime-local' name='to' value='{esc(params.get('to', ''))}'></label>"
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
