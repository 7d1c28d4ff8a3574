"""A Flyte 2 run's page, at the URL the `flyte` SDK prints (`/v2/domain/<d>/project/<p>/runs/<run>`): its
actions as a tree (each under the action that started it), with phase, attempts, duration, error and log links;
live while the run is not done (pure: rendered from the run's action rows)."""

from __future__ import annotations

import json

from flyteidl2.common import phase_pb2

from flytelite.connect import details
from flytelite.console.layout import esc, fmt_duration, fmt_time, layout, phase_badge
from flytelite.runs.store import ROOT
from flytelite.store.models import Action


def phase_name(phase: int) -> str:
    return phase_pb2.ActionPhase.Name(phase).removeprefix("ACTION_PHASE_")


def run_page(project: str, domain: str, run: str, actions: list[Action]) -> str:
    by_parent: dict[str, list[Action]] = {}
    for action in actions:
        by_parent.setdefault(action.parent, []).append(action)
    root = next((a for a in actions if a.name == ROOT), None)
    rows: list[str] = []

    def walk(parent: str, depth: int) -> None:
        for action in by_parent.get(parent, []):
            rows.append(_row(action, depth))
            walk(action.name, depth + 1)

    walk("", 0)
    running = root is not None and not all(a.done for a in actions)
    summary = (f"<p>{phase_badge(phase_name(root.phase))} {len(actions)} actions · started "
               f"{esc(fmt_time(root.created_at))}</p>" if root is not None else "")
    body = (f"<div id='content' data-running='{1 if running else 0}'><h1>Run {esc(run)}</h1>"
            f"<section id='run' data-live>{summary}<table><tr><th>action</th><th>phase</th><th>attempts</th>"
            f"<th>duration</th><th>error</th><th>logs</th></tr>{''.join(rows)}</table></section></div>")
    return layout(f"Run {run}", body, project, domain)


def _row(action: Action, depth: int) -> str:
    state = json.loads(action.state_json or "{}")
    links = [link for record in state.get("ended", []) for link in record.get("logs", [])] + state.get("logs", [])
    logs = " ".join(f"<a href='{esc(link['uri'])}'>{esc(link['name'])}</a>" for link in links)
    duration = ((action.ended_at - (action.started_at or action.created_at)).total_seconds()
                if action.ended_at is not None else None)
    info = details.error_info(action)
    error = f"<pre>{esc(info.code)}: {esc(info.message)}</pre>" if info is not None else ""
    metadata = details.metadata(action)
    title = metadata.task.short_name or metadata.trace.name or metadata.condition.name or action.kind
    indent = f"padding-left:{depth * 1.5}em"
    return (f"<tr><td style='{indent}'>{esc(title)} <span class='muted'>{esc(action.kind)} "
            f"{esc(action.name)}</span></td>"
            f"<td>{phase_badge(phase_name(action.phase))}</td><td>{action.attempts}</td>"
            f"<td>{esc(fmt_duration(duration))}</td><td>{error}</td><td>{logs}</td></tr>")
