"""The console's page shell and the small HTML helpers every page uses (pure: no I/O).

Every value that comes from users or the store passes through `esc` (or the
literal HtmlFormatter, which escapes) before it reaches a page. Pages are plain
HTML with one stylesheet and one script served from /console/static; no CDN.
"""

from __future__ import annotations

import html
from datetime import datetime, timezone
from urllib.parse import quote, urlencode

from flytelite.console.literals import HtmlFormatter, Links, render_literal_map
from flytelite.console.views import Data
from flytelite.context import CALLER

esc = html.escape
LinkFor = Links
DEFAULT_DOMAIN = "development"

OK_PHASES = frozenset({"SUCCEEDED", "RECOVERED", "SUCCESS"})
BAD_PHASES = frozenset({"FAILED", "FAILING", "TIMED_OUT", "TIMING_OUT"})
STOPPED_PHASES = frozenset({"ABORTED", "ABORTING"})
# Phases after which nothing changes (of executions, nodes and task attempts).
TERMINAL = frozenset({"SUCCEEDED", "FAILED", "ABORTED", "TIMED_OUT", "RECOVERED", "SKIPPED"})
RUN_PHASES = frozenset({"QUEUED", "RUNNING", "SUCCEEDING", "DYNAMIC_RUNNING", "INITIALIZING",
                        "WAITING_FOR_RESOURCES", "RETRYABLE_FAILURE", "UNDEFINED_RUNNING"})


def may(permission: str, project: str, domain: str) -> bool:
    """Whether the signed-in viewer of the page may take actions needing `permission` (launch, register, ...)
    there: pages show only the actions one may take. Always, without authentication."""
    caller = CALLER.get()
    return caller is None or caller.allows(permission, project, domain)


def layout(title: str, body: str, project: str = "", domain: str = "") -> str:
    nav = ""
    if project:
        q = _q(domain=domain or DEFAULT_DOMAIN)
        p = quote(project, safe="")
        nav = "".join(f"<a href='/console/projects/{p}/{path}{q}'>{label}</a>" for path, label in (
            ("executions", "Executions"), ("workflows", "Workflows"), ("tasks", "Tasks"),
            ("launchPlans", "Launch plans"), ("schedules", "Schedules")))
        nav += (f"<a href='/v2/domain/{quote(domain or DEFAULT_DOMAIN, safe='')}/project/{p}/runs'>"
                "Flyte 2 runs</a>")
        nav = (f"<span class='proj'><a href='/console/projects/{p}{q}'>{esc(project)}</a>"
               f" · {esc(domain or DEFAULT_DOMAIN)}</span>{nav}")
    nav += "<button class='secondary zone' data-zone title='Show times in UTC or in this browser’s zone'>UTC</button>"
    if may("admin", "", ""):
        nav += "<a class='audit' href='/console/audit'>Audit trail</a>"
    return (f"<!doctype html><html><head><meta charset='utf-8'><title>{esc(title)} · flytelite</title>"
            "<link rel='stylesheet' href='/console/static/console.css'>"
            f"</head><body><header><a class='brand' href='/console'>flytelite console</a>{nav}</header>"
            f"<main>{body}</main><script src='/console/static/console.js'></script></body></html>")


def not_found_page(message: str) -> str:
    return layout("Not found", f"<h1>Not found</h1><p>{esc(message)}</p>"
                               "<p><a href='/console'>All projects</a></p>")


def _q(**params: str) -> str:
    kept = {k: v for k, v in params.items() if v}
    return "?" + urlencode(kept) if kept else ""


def execution_url(project: str, domain: str, name: str) -> str:
    return f"/console/projects/{quote(project, safe='')}/domains/{quote(domain, safe='')}/executions/{quote(name, safe='')}"


ENTITY_PATHS = {"workflow": "workflows", "task": "tasks", "launch_plan": "launchPlans"}


def entity_url(kind: str, project: str, domain: str, name: str, version: str = "") -> str:
    """Flyte console's entity page: kind is workflow, task or launch_plan."""
    return (f"/console/projects/{quote(project, safe='')}/{ENTITY_PATHS[kind]}/{quote(name, safe='')}"
            + _q(domain=domain, version=version))


def project_url(project: str, page: str, domain: str, **params: str) -> str:
    return f"/console/projects/{quote(project, safe='')}/{page}" + _q(domain=domain, **params)


def fmt_time(dt: datetime | None) -> str:
    """A time in UTC, marked up so that the page script can show it in the viewer's own zone instead."""
    if dt is None:
        return "—"
    return f"<time datetime='{iso(dt)}'>{dt.astimezone(timezone.utc) if dt.tzinfo else dt:%Y-%m-%d %H:%M:%S} UTC</time>"


def iso(dt: datetime | None) -> str:
    if dt is None:
        return ""
    return (dt if dt.tzinfo else dt.replace(tzinfo=timezone.utc)).isoformat()


def fmt_duration(seconds: float | None) -> str:
    if seconds is None:
        return "—"
    if seconds < 60:
        return f"{seconds:.1f}s"
    minutes, secs = divmod(int(seconds), 60)
    if minutes < 60:
        return f"{minutes}m {secs:02d}s"
    hours, minutes = divmod(minutes, 60)
    return f"{hours}h {minutes:02d}m"


def phase_class(phase: str) -> str:
    return ("ok" if phase in OK_PHASES else "bad" if phase in BAD_PHASES else "stop" if phase in STOPPED_PHASES else
            "run" if phase in RUN_PHASES else "idle")


def phase_badge(phase: str) -> str:
    return f"<span class='phase {phase_class(phase)}'>{esc(phase)}</span>"


def tags_and_labels(tags, labels) -> str:
    """An execution's tags and labels (key=value) as chips."""
    chips = [*tags, *(f"{k}={v}" for k, v in sorted(labels.items()))]
    return " ".join(f"<span class='tag'>{esc(chip)}</span>" for chip in chips)


def state_badge(active: bool) -> str:
    """A launch plan's state: ACTIVE (its schedule runs) or INACTIVE."""
    return f"<span class='phase {'active' if active else 'inactive'}'>{'ACTIVE' if active else 'INACTIVE'}</span>"


def data_table(data: Data | None, fmt: HtmlFormatter, empty: str = "none") -> str:
    """A LiteralMap as a name/value table (values rendered by type; blobs as download links)."""
    if data is None:
        return "<span class='muted'>not shown for executions this large</span>"
    if data.problem:
        return f"<span class='muted'>{esc(data.problem)}</span>"
    if data.literals is None or not data.literals.literals:
        return f"<span class='muted'>{esc(empty)}</span>"
    rows = "".join(f"<tr><td>{name}</td><td><pre>{value}</pre></td></tr>"
                   for name, value in render_literal_map(data.literals, fmt))
    return f"<table class='kv'>{rows}</table>"


def table(headers: list[str], rows: list[str], empty: str, cls: str = "") -> str:
    if not rows:
        return f"<p class='muted'>{esc(empty)}</p>"
    head = "".join(f"<th>{esc(h)}</th>" for h in headers)
    return f"<table{f' class={cls}' if cls else ''}><tr>{head}</tr>{''.join(rows)}</table>"


def error_block(error: str, cls: str = "error") -> str:
    """An error: its last line (usually the exception) in view, the whole text one click away."""
    if not error:
        return ""
    lines = [line for line in error.strip().splitlines() if line.strip()]
    head = lines[-1].strip() if lines else error
    if len(lines) <= 1:
        return f"<div class='{cls}'><pre>{esc(error)}</pre></div>"
    return (f"<details class='{cls}'><summary>{esc(head)}</summary><pre>{esc(error)}</pre></details>")


def log_link(name: str, uri: str, live: bool) -> str:
    """A log's link; flytelite's own log files open in the page's log viewer (streamed while `live`)."""
    # Only web links become hrefs: a log URI is not allowed to run script in the console's origin.
    if not uri.startswith(("http://", "https://", "/")):
        return f"{esc(name)}: {esc(uri)}"
    follow = ""
    if "/logs/" in uri:
        # The in-page viewer streams flytelite's own log files; other links open as they are.
        follow = f" data-log='{esc(uri[uri.index('/logs/'):])}' data-live-log='{1 if live else 0}'"
    return f"<a class='log' href='{esc(uri)}'{follow}>{esc(name)}</a>"


def log_panel() -> str:
    """The log viewer the page script opens beside the page."""
    return ("<div id='log-panel'><div class='bar'><span id='log-title'></span><span>"
            "<a id='log-raw' target='_blank' style='color:#cfd8ff'>raw</a> "
            "<button class='secondary' id='log-close'>Close</button></span></div><pre id='log-text'></pre></div>")
