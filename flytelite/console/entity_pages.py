"""Pages for registered entities: projects, a project's dashboard, workflows, tasks and launch plans.

Read through the admin servicer in-process (the same methods the gRPC and REST
APIs run). An entity page lists its versions, shows the selected version's typed
interface (and, for workflows, its graph), the launch form, and its recent executions.
"""

from __future__ import annotations

import json
from collections.abc import Callable

from flyteidl.admin import common_pb2, execution_pb2, launch_plan_pb2, project_pb2
from flyteidl.core import identifier_pb2 as idpb
from flyteidl.core import interface_pb2

from flytelite.console.actions import expected_inputs, pairs_text
from flytelite.console.dag import render_dag
from flytelite.console.launch_form import LaunchChoices, interface_table, launch_form
from flytelite.console.layout import (
    entity_url,
    esc,
    execution_url,
    fmt_duration,
    fmt_time,
    layout,
    may,
    phase_badge,
    project_url,
    state_badge,
    table,
    tags_and_labels,
)
from flytelite.errors import NotFound
from flytelite.idl.phases import workflow_phase_name
from flytelite.idl.times import from_timestamp

KINDS = {
    "workflows": ("workflow", idpb.WORKFLOW, "Workflows", "ListWorkflowIds", "ListWorkflows", "GetWorkflow"),
    "tasks": ("task", idpb.TASK, "Tasks", "ListTaskIds", "ListTasks", "GetTask"),
    "launchPlans": ("launch_plan", idpb.LAUNCH_PLAN, "Launch plans", "ListLaunchPlanIds", "ListLaunchPlans",
                    "GetLaunchPlan"),
}
# Flyte console's singular path segments (the links flytekit prints) -> the plural pages.
SINGULAR = {"workflow": "workflows", "task": "tasks", "launch_plan": "launchPlans"}
_EXEC_FILTER = {"workflow": "workflow.name", "task": "task.name", "launch_plan": "launch_plan.name"}
DESC = common_pb2.Sort(key="created_at", direction=common_pb2.Sort.DESCENDING)


def projects_page(admin) -> str:
    projects = admin.ListProjects(project_pb2.ProjectListRequest(limit=1000), None).projects
    cards = []
    for p in projects:
        domains = " · ".join(f"<a href='{esc(project_url(p.id, 'executions', d.id))}'>{esc(d.name or d.id)}</a>"
                             for d in p.domains)
        cards.append(f"<div class='card' data-project='{esc(p.id)}'><h3><a href='{esc(project_url(p.id, '', ''))}'>"
                     f"{esc(p.name or p.id)}</a></h3><div class='muted'>{esc(p.description)}</div>"
                     f"<div>{domains}</div></div>")
    body = "<h1>Projects</h1><div class='cards'>" + ("".join(cards) or "<p class='muted'>No projects.</p>") + "</div>"
    return layout("Projects", body)


def known_project(admin, project: str) -> None:
    """NotFound (a 404 page) when there is no such project."""
    admin.GetProject(project_pb2.ProjectGetRequest(id=project), None)


def project_page(admin, project: str, domain: str) -> str:
    known_project(admin, project)
    sections = []
    for path, (kind, _rt, title, list_ids, _l, _g) in KINDS.items():
        names = _names(admin, list_ids, project, domain, 20)
        links = "".join(f"<li><a href='{esc(entity_url(kind, project, domain, n))}'>{esc(n)}</a></li>" for n in names)
        sections.append(f"<div class='card'><h3><a href='{esc(project_url(project, path, domain))}'>{title}</a></h3>"
                        f"<ul>{links or '<li class=muted>none</li>'}</ul></div>")
    recent = recent_executions(admin, project, domain, "", 10)
    body = (f"<h1>{esc(project)} <span class='muted'>/ {esc(domain)}</span></h1>{_domain_switch(admin, project, domain)}"
            f"<div class='cards'>{''.join(sections)}</div><h2>Recent executions "
            f"<a class='muted' href='{esc(project_url(project, 'executions', domain))}'>(all)</a></h2>{recent}")
    return layout(project, body, project, domain)


def _domain_switch(admin, project: str, domain: str) -> str:
    domains = admin.GetDomains(project_pb2.GetDomainRequest(), None).domains
    return "<p>Domain: " + " · ".join(
        f"<b>{esc(d.id)}</b>" if d.id == domain else f"<a href='{esc(project_url(project, '', d.id))}'>{esc(d.id)}</a>"
        for d in domains) + "</p>"


def _names(admin, rpc: str, project: str, domain: str, limit: int) -> list[str]:
    listed = getattr(admin, rpc)(common_pb2.NamedEntityIdentifierListRequest(project=project, domain=domain,
                                                                             limit=limit), None)
    return [e.name for e in listed.entities]


def entity_list_page(admin, path: str, project: str, domain: str) -> str:
    kind, _rt, title, list_ids, list_rpc, _g = KINDS[path]
    known_project(admin, project)
    names = _names(admin, list_ids, project, domain, 1000)
    rows = []
    for n in names:
        latest = getattr(admin, list_rpc)(common_pb2.ResourceListRequest(
            id=common_pb2.NamedEntityIdentifier(project=project, domain=domain, name=n), limit=1, sort_by=DESC), None)
        version, created = "", None
        for item in _items(latest):
            version, created = item.id.version, _created(item)
        rows.append(f"<tr><td><a href='{esc(entity_url(kind, project, domain, n))}'>{esc(n)}</a></td>"
                    f"<td>{esc(version)}</td><td>{fmt_time(created)}</td></tr>")
    body = f"<h1>{title}</h1>" + table(["Name", "Latest version", "Registered"], rows, f"No {title.lower()} yet.")
    return layout(title, body, project, domain)


def _items(listed):
    for field in ("workflows", "tasks", "launch_plans"):
        if hasattr(listed, field):
            return list(getattr(listed, field))
    return []


def _created(entity):
    ts = entity.closure.created_at
    return from_timestamp(ts) if ts.seconds or ts.nanos else None


def entity_page(admin, path: str, project: str, domain: str, name: str, version: str = "") -> str:
    kind, rt, title, _ids, list_rpc, get_rpc = KINDS[path]
    listed = getattr(admin, list_rpc)(common_pb2.ResourceListRequest(
        id=common_pb2.NamedEntityIdentifier(project=project, domain=domain, name=name), limit=100, sort_by=DESC), None)
    versions = _items(listed)
    if not versions:
        raise NotFound(f"there is no {kind.replace('_', ' ')} {name} in project {project}, domain {domain}")
    version = version or versions[0].id.version
    entity = getattr(admin, get_rpc)(common_pb2.ObjectGetRequest(id=idpb.Identifier(
        resource_type=rt, project=project, domain=domain, name=name, version=version)), None)
    rows = [f"<tr{' class=current' if v.id.version == version else ''}><td>"
            f"<a href='{esc(entity_url(kind, project, domain, name, v.id.version))}'>{esc(v.id.version)}</a>"
            f"{' <span class=muted>(shown)</span>' if v.id.version == version else ''}</td>"
            f"<td>{fmt_time(_created(v))}</td>{_state_cell(kind, v)}</tr>"
            for v in versions]
    headers = ["Version", "Registered"] + (["State"] if kind == "launch_plan" else [])
    choices = LaunchChoices(versions=[(v.id.version, entity_url(kind, project, domain, name, v.id.version))
                                      for v in versions])
    if kind != "task":
        workflow = name if kind == "workflow" else entity.spec.workflow_id.name
        choices.plans = _plans_of(admin, project, domain, workflow)
    detail = {"workflow": _workflow_detail, "task": _task_detail, "launch_plan": _launch_plan_detail}[kind](
        admin, entity, choices)
    body = (f"<h1><span class='muted'>{esc(title[:-1])}</span> {esc(name)}</h1>"
            f"<p class='muted'>version {esc(version)}</p>{detail}"
            f"<h2>Recent executions</h2>{recent_executions(admin, project, domain, f'eq({_EXEC_FILTER[kind]},{name})', 20)}"
            f"<h2>Versions</h2>{table(headers, rows, 'none')}")
    return layout(name, body, project, domain)


def _state_cell(kind: str, lp) -> str:
    if kind != "launch_plan":
        return ""
    return f"<td>{state_badge(lp.closure.state == launch_plan_pb2.ACTIVE)}</td>"


def _plans_of(admin, project: str, domain: str, workflow: str) -> list[tuple[str, str]]:
    """The launch plans of a workflow, each with its page's href."""
    listed = admin.ListLaunchPlanIds(common_pb2.NamedEntityIdentifierListRequest(
        project=project, domain=domain, limit=200, filters=f"eq(workflow.name,{workflow})"), None)
    return [(n, entity_url("launch_plan", project, domain, n)) for n in sorted(e.name for e in listed.entities)]


def _workflow_detail(admin, wf, choices: LaunchChoices) -> str:
    iface = wf.closure.compiled_workflow.primary.template.interface
    ident = wf.id
    parts = [interface_table(iface.inputs, "Inputs"), interface_table(iface.outputs, "Outputs"),
             f"<h2>Graph</h2><div class='dag'>{render_dag(wf.closure.compiled_workflow.primary, {})}</div>"]
    try:
        lp = admin.GetLaunchPlan(common_pb2.ObjectGetRequest(id=idpb.Identifier(
            resource_type=idpb.LAUNCH_PLAN, project=ident.project, domain=ident.domain, name=ident.name,
            version=ident.version)), None)
    except NotFound:
        parts.append("<p class='muted'>No default launch plan of this version to launch with.</p>")
    else:
        parts.insert(0, launch_form("launch_plan", ident.project, ident.domain, ident.name, ident.version,
                                    lp.closure.expected_inputs, lp.spec.fixed_inputs, choices))
    return "".join(parts)


def _task_detail(admin, task, choices: LaunchChoices) -> str:
    template = task.closure.compiled_task.template
    params = interface_pb2.ParameterMap()
    for n, var in template.interface.inputs.variables.items():
        params.parameters[n].var.CopyFrom(var)
        params.parameters[n].required = True
    container = template.container
    meta = [("Type", template.type), ("Image", container.image), ("Retries", str(template.metadata.retries.retries)),
            ("Cache", f"version {template.metadata.discovery_version}" if template.metadata.discoverable else "off")]
    rows = "".join(f"<tr><td>{k}</td><td>{esc(v)}</td></tr>" for k, v in meta if v)
    ident = task.id
    return (launch_form("task", ident.project, ident.domain, ident.name, ident.version, params, None, choices)
            + f"<h2>Task</h2><table class='meta'>{rows}</table>"
            + interface_table(template.interface.inputs, "Inputs") + interface_table(template.interface.outputs, "Outputs"))


def _launch_plan_detail(admin, lp, choices: LaunchChoices) -> str:
    ident = lp.id
    spec = lp.spec
    schedule = spec.entity_metadata.schedule
    which = schedule.WhichOneof("ScheduleExpression")
    sched = ("—" if not which else schedule.cron_expression if which == "cron_expression" else
             schedule.cron_schedule.schedule if which == "cron_schedule" else
             f"every {schedule.rate.value} {esc(str(schedule.rate.unit))}")
    active = lp.closure.state == launch_plan_pb2.ACTIVE
    lp_json = esc(json.dumps({"project": ident.project, "domain": ident.domain, "name": ident.name,
                              "version": ident.version}))
    toggle = (f"<button class='secondary' data-lp-state='{'INACTIVE' if active else 'ACTIVE'}' data-lp='{lp_json}'>"
              f"{'Deactivate' if active else 'Activate'}</button><span class='lp-result'></span>"
              if may("launch", ident.project, ident.domain) else "")
    wf = spec.workflow_id
    rows = [("State", state_badge(active) + " " + toggle),
            ("Workflow", f"<a href='{esc(entity_url('workflow', wf.project, wf.domain, wf.name, wf.version))}'>"
                         f"{esc(wf.name)} ({esc(wf.version)})</a>"),
            ("Schedule", esc(sched)), ("Concurrency", esc(_concurrency(spec)))]
    meta = "".join(f"<tr><td>{k}</td><td>{v}</td></tr>" for k, v in rows)
    return (launch_form("launch_plan", ident.project, ident.domain, ident.name, ident.version,
                        lp.closure.expected_inputs, spec.fixed_inputs, choices)
            + f"<h2>Launch plan</h2><table class='meta'>{meta}</table>"
            + interface_table(interface_pb2.VariableMap(), "Inputs", lp.closure.expected_inputs)
            + interface_table(lp.closure.expected_outputs, "Outputs"))


def _concurrency(spec) -> str:
    """The launch plan's concurrency policy in words (Flyte 1.16)."""
    if not spec.HasField("concurrency_policy"):
        return "no limit"
    policy = spec.concurrency_policy
    if policy.behavior == launch_plan_pb2.CONCURRENCY_LIMIT_BEHAVIOR_SKIP:
        return f"at most {policy.max} unfinished executions (all versions); a launch over that is refused"
    return f"at most {policy.max}, behavior {policy.behavior} (not enforced)"


def recent_executions(admin, project: str, domain: str, filters: str, limit: int) -> str:
    listed = admin.ListExecutions(common_pb2.ResourceListRequest(
        id=common_pb2.NamedEntityIdentifier(project=project, domain=domain), filters=filters, limit=limit,
        sort_by=DESC), None)
    return executions_table(listed.executions)


def executions_table(executions: list[execution_pb2.Execution],
                     heading: Callable[[str, str], str] | None = None) -> str:
    """The executions as a table; `heading(column, key)` makes a sortable column's heading (a link)."""
    rows = []
    for e in executions:
        c, ident = e.closure, e.id
        target = e.spec.launch_plan.name or c.workflow_id.name
        started = from_timestamp(c.started_at) if c.started_at.seconds else None
        created = from_timestamp(c.created_at) if c.created_at.seconds else None
        duration = c.duration.ToTimedelta().total_seconds() if c.duration.seconds or c.duration.nanos else None
        rows.append(f"<tr data-execution-row='{esc(ident.name)}'><td><a href='{esc(execution_url(ident.project, ident.domain, ident.name))}'>"
                    f"{esc(ident.name)}</a></td><td>{phase_badge(workflow_phase_name(c.phase))}</td>"
                    f"<td>{esc(target)}</td><td>{fmt_time(created)}</td><td>{fmt_time(started)}</td>"
                    f"<td>{fmt_duration(duration)}</td><td>{tags_and_labels(e.spec.tags, e.spec.labels.values)}</td></tr>")
    headers = ["Execution", "Phase", "Launch plan", "Created", "Started", "Duration", "Tags and labels"]
    if heading is None or not rows:
        return table(headers, rows, "No executions.")
    keys = {"Execution": "name", "Created": "created_at", "Duration": "duration"}
    cells = "".join(heading(h, keys[h]) if h in keys else f"<th>{esc(h)}</th>" for h in headers)
    return f"<table><tr>{cells}</tr>{''.join(rows)}</table>"


def relaunch_page(admin, project: str, domain: str, name: str) -> str:
    """The launch form of an execution's launch plan (or task), filled with that execution's inputs and options;
    what it launches is a relaunch of it (FlyteAdmin's RELAUNCH mode, naming it as the reference)."""
    exec_id = idpb.WorkflowExecutionIdentifier(project=project, domain=domain, name=name)
    ex = admin.GetExecution(execution_pb2.WorkflowExecutionGetRequest(id=exec_id), None)
    data = admin.GetExecutionData(execution_pb2.WorkflowExecutionGetDataRequest(id=exec_id), None)
    spec, ident = ex.spec, ex.spec.launch_plan
    options = {"labels": pairs_text(spec.labels.values), "annotations": pairs_text(spec.annotations.values),
               "max_parallelism": str(spec.max_parallelism) if spec.max_parallelism else "",
               "raw_output_prefix": spec.raw_output_data_config.output_location_prefix,
               "overwrite_cache": "true" if spec.overwrite_cache else ""}
    choices = LaunchChoices(values=data.full_inputs, options=options, relaunch_of=name)
    if ident.resource_type == idpb.TASK:
        form = launch_form("task", project, domain, ident.name, ident.version, expected_inputs(admin, ident), None,
                           choices)
    else:
        lp = admin.GetLaunchPlan(common_pb2.ObjectGetRequest(id=ident), None)
        form = launch_form("launch_plan", project, domain, ident.name, ident.version, lp.closure.expected_inputs,
                           lp.spec.fixed_inputs, choices)
    source = execution_url(project, domain, name)
    body = (f"<h1>Relaunch {esc(name)}</h1><p>With the inputs and options of <a class='source' href='{esc(source)}'>"
            f"{esc(name)}</a>; change what should differ.</p>"
            + (form or "<p class='muted'>You may not launch in this project and domain.</p>"))
    return layout(f"Relaunch {name}", body, project, domain)
