"""Flyte 2's pages, at the URLs the `flyte` SDK prints (pure: rendered from action rows and what the caller read).

- A project's runs (`/v2/domain/<d>/project/<p>/runs`): the newest first, filtered by phase and task, live while
  one of them runs.
- A run (`/v2/domain/<d>/project/<p>/runs/<run>`): its actions as a tree (each under the action that started it),
  with phase, attempts, duration, error and log links, and an abort button while it runs, and a timeline;
  `?i=<action>` opens an action's panel, with its inputs, outputs and report.
"""

from __future__ import annotations

import json
from datetime import datetime
from urllib.parse import urlencode

from flyteidl.core import literals_pb2
from flyteidl2.common import phase_pb2
from flyteidl2.workflow import run_definition_pb2

from flytelite.connect import details
from flytelite.console.gantt import Row, render_rows
from flytelite.console.layout import esc, fmt_duration, fmt_time, layout, phase_badge, table
from flytelite.console.literals import NO_LINKS, HtmlFormatter, Links, render_literal_map
from flytelite.console.views import ActionData
from flytelite.runs.store import ROOT
from flytelite.store.db import as_utc
from flytelite.store.models import Action

PHASES = [name.removeprefix("ACTION_PHASE_") for name in phase_pb2.ActionPhase.keys()][1:]


def phase_name(phase: int) -> str:
    return phase_pb2.ActionPhase.Name(phase).removeprefix("ACTION_PHASE_")


def runs_url(project: str, domain: str, **query: str) -> str:
    params = urlencode({k: v for k, v in query.items() if v})
    return f"/v2/domain/{domain}/project/{project}/runs" + (f"?{params}" if params else "")


def run_url(project: str, domain: str, run: str, action: str = "") -> str:
    return f"/v2/domain/{domain}/project/{project}/runs/{run}" + (f"?{urlencode({'i': action})}" if action else "")


def _title(action: Action, metadata: run_definition_pb2.ActionMetadata | None = None) -> str:
    metadata = metadata or details.metadata(action)
    return metadata.task.short_name or metadata.trace.name or metadata.condition.name or action.kind


def _duration(action: Action) -> float | None:
    return ((action.ended_at - (action.started_at or action.created_at)).total_seconds()
            if action.ended_at is not None else None)


def runs_page(project: str, domain: str, runs: list[Action], phase: str, task: str) -> str:
    """`runs`: the project's newest runs' root actions, newest first, already filtered by `phase` and `task`."""
    rows = [f"<tr><td><a href='{esc(run_url(project, domain, r.run_name))}'>{esc(r.run_name)}</a></td>"
            f"<td>{esc(_title(r))}</td><td>{phase_badge(phase_name(r.phase))}</td>"
            f"<td>{fmt_time(r.created_at)}</td><td>{esc(fmt_duration(_duration(r)))}</td></tr>" for r in runs]
    options = "".join(f"<option{' selected' if p == phase else ''}>{esc(p)}</option>" for p in ["", *PHASES])
    form = (f"<form class='filters' method='get' action='{esc(runs_url(project, domain))}'>"
            f"<label>phase <select name='phase'>{options}</select></label> "
            f"<label>task <input name='task' value='{esc(task)}' placeholder='name'></label> "
            "<button type='submit'>Filter</button></form>")
    running = any(not r.done for r in runs)
    body = (f"<div id='content' data-running='{1 if running else 0}'><h1>Flyte 2 runs</h1>{form}"
            f"<section id='runs' data-live>"
            f"{table(['run', 'task', 'phase', 'started', 'duration'], rows, 'No runs.')}</section></div>")
    return layout("Flyte 2 runs", body, project, domain)


def run_page(project: str, domain: str, run: str, actions: list[Action], now: datetime, selected: str = "",
             data: ActionData | None = None, link: Links = NO_LINKS,
             may_abort: bool = True) -> str:
    by_parent: dict[str, list[Action]] = {}
    for action in actions:
        by_parent.setdefault(action.parent, []).append(action)
    root = next((a for a in actions if a.name == ROOT), None)
    rows: list[str] = []

    ordered: list[Action] = []
    depths: dict[str, int] = {}

    def walk(parent: str, depth: int) -> None:
        for action in by_parent.get(parent, []):
            rows.append(_row(project, domain, action, depth, action.name == selected))
            ordered.append(action)
            depths[action.name] = depth
            walk(action.name, depth + 1)

    walk("", 0)
    running = root is not None and not all(a.done for a in actions)
    summary = (f"<p>{phase_badge(phase_name(root.phase))} {len(actions)} actions · started "
               f"{fmt_time(root.created_at)}</p>" if root is not None else "")
    abort = ("<p><button class='danger' data-action='abort-run'>Abort</button> <span class='action-result'></span>"
             "</p>" if running and may_abort else "")
    panel = _panel(next((a for a in actions if a.name == selected), None), data, link)
    bars: list[Row] = [(f"{'&nbsp;' * 3 * depths[a.name]}{esc(_title(a))}", phase_name(a.phase), a.started_at,
                        _duration(a) if a.ended_at is not None else
                        ((now - as_utc(a.started_at)).total_seconds() if a.started_at is not None else None),
                        a.name, False) for a in ordered]
    timeline = (f"<h2>Timeline</h2><div class='gantt' id='gantt' data-live>"
                f"{render_rows(bars, root.created_at if root else None, None)}</div>")
    run_id = json.dumps({"project": project, "domain": domain, "name": run})
    body = (f"<div id='content' data-running='{1 if running else 0}' data-run='{esc(run_id)}'>"
            f"<p><a href='{esc(runs_url(project, domain))}'>Flyte 2 runs</a></p><h1>Run {esc(run)}</h1>"
            f"<section id='run' data-live>{summary}{abort}<table><tr><th>action</th><th>phase</th><th>attempts</th>"
            f"<th>duration</th><th>error</th><th>logs</th></tr>{''.join(rows)}</table></section>{panel}{timeline}</div>")
    return layout(f"Run {run}", body, project, domain)


def _row(project: str, domain: str, action: Action, depth: int, selected: bool) -> str:
    state = json.loads(action.state_json or "{}")
    links = [link for record in state.get("ended", []) for link in record.get("logs", [])] + state.get("logs", [])
    logs = " ".join(f"<a href='{esc(link['uri'])}'>{esc(link['name'])}</a>" for link in links)
    info = details.error_info(action)
    error = f"<pre>{esc(info.code)}: {esc(info.message)}</pre>" if info is not None else ""
    indent = f"padding-left:{depth * 1.5}em"
    href = run_url(project, domain, action.run_name, action.name)
    metadata = details.metadata(action)
    group = f" · group {esc(metadata.group)}" if metadata.group else ""
    return (f"<tr{' class=selected' if selected else ''}><td style='{indent}'>"
            f"<a href='{esc(href)}'>{esc(_title(action, metadata))}</a> <span class='muted'>{esc(action.kind)} "
            f"{esc(action.name)}{group}</span></td>"
            f"<td>{phase_badge(phase_name(action.phase))}</td><td>{action.attempts}</td>"
            f"<td>{esc(fmt_duration(_duration(action)))}</td><td>{error}</td><td>{logs}</td></tr>")


def _panel(action: Action | None, data: ActionData | None, link: Links) -> str:
    if action is None or data is None:
        return ""
    fmt = HtmlFormatter(link)

    def values(literals: literals_pb2.LiteralMap | None, empty: str) -> str:
        if literals is None or not literals.literals:
            return f"<span class='muted'>{esc(empty)}</span>"
        return "<table class='kv'>" + "".join(f"<tr><td>{name}</td><td><pre>{value}</pre></td></tr>"
                                              for name, value in render_literal_map(literals, fmt)) + "</table>"

    href = link(data.report) if data.report else None
    report = f"<p><a href='{esc(href)}'>Report</a></p>" if href else ""
    return (f"<section id='action' data-live><h2>{esc(_title(action))} <span class='muted'>{esc(action.name)}"
            f"</span></h2>{report}<h3>Inputs</h3>{values(data.inputs, 'none')}<h3>Outputs</h3>"
            f"{values(data.outputs, 'none yet' if not action.done else 'none')}</section>")
