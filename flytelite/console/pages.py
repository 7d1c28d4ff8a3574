"""Server-rendered console pages: plain HTML, inline CSS, one small script; no CDN, no build step.

Every value that comes from users or the store passes through `esc` (or the
literal HtmlFormatter, which escapes) before it reaches the page.
"""

from __future__ import annotations

import html
from collections.abc import Callable
from datetime import datetime

from flytelite.console.literals import HtmlFormatter, render_literal_map
from flytelite.console.views import AttemptView, Data, ExecutionSummary, ExecutionView, NodeView

esc = html.escape

_CSS = """
body{font-family:system-ui,-apple-system,Segoe UI,sans-serif;margin:0;color:#1d2330;background:#f6f7f9}
header{background:#2b1d5c;color:#fff;padding:10px 24px}header a{color:#fff;text-decoration:none;font-weight:600}
main{padding:16px 24px;max-width:1400px}h1{font-size:1.4em;margin:.2em 0}h2{font-size:1.1em;margin:1.2em 0 .4em}
table{border-collapse:collapse;width:100%;background:#fff}th,td{text-align:left;padding:6px 10px;
border-bottom:1px solid #e3e5ea;vertical-align:top}th{background:#eef0f4;font-weight:600}
.phase{display:inline-block;padding:1px 8px;border-radius:10px;font-size:.85em;font-weight:600;background:#dde1e8}
.ok{background:#d3f2dc;color:#13672f}.bad{background:#fbd9d9;color:#9b1c1c}.run{background:#d9e6fb;color:#1b4a9b}
.meta td:first-child{width:160px;color:#5a6170}pre{margin:0;white-space:pre-wrap;word-break:break-word;
font-family:ui-monospace,Menlo,Consolas,monospace;font-size:.88em}.error{background:#fff1f1;border:1px solid
#f3b6b6;padding:10px;border-radius:4px}.muted{color:#7a8190}.kv td:first-child{width:200px;font-family:ui-monospace,
monospace}a{color:#3553c5}details summary{cursor:pointer;color:#3553c5}
"""

# Refreshes #content in place while the execution runs, keeping the <details> the reader opened or closed.
_REFRESH = """
<script>
(function () {
  function running() { var c = document.getElementById("content"); return c && c.dataset.running === "1"; }
  async function tick() {
    try {
      var r = await fetch(location.href, {cache: "no-store"});
      if (r.ok) {
        var fresh = new DOMParser().parseFromString(await r.text(), "text/html").getElementById("content");
        var state = {};
        document.querySelectorAll("#content details[id]").forEach(function (d) { state[d.id] = d.open; });
        fresh.querySelectorAll("details[id]").forEach(function (d) { if (d.id in state) d.open = state[d.id]; });
        document.getElementById("content").replaceWith(fresh);
      }
    } catch (e) { /* server restarting: try again next tick */ }
    if (running()) setTimeout(tick, 2000);
  }
  if (running()) setTimeout(tick, 2000);
})();
</script>
"""


def layout(title: str, body: str) -> str:
    return (f"<!doctype html><html><head><meta charset='utf-8'><title>{esc(title)} · flytelite</title>"
            f"<style>{_CSS}</style></head><body><header><a href='/console'>flytelite console</a></header>"
            f"<main>{body}</main>{_REFRESH}</body></html>")


def fmt_time(dt: datetime | None) -> str:
    return dt.strftime("%Y-%m-%d %H:%M:%S UTC") if dt is not None else "—"


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


def phase_badge(phase: str) -> str:
    cls = ("ok" if phase in ("SUCCEEDED", "RECOVERED") else
           "bad" if phase in ("FAILED", "FAILING", "ABORTED", "TIMED_OUT", "ABORTING") else
           "run" if phase in ("QUEUED", "RUNNING", "SUCCEEDING", "DYNAMIC_RUNNING", "INITIALIZING",
                              "WAITING_FOR_RESOURCES") else "")
    return f"<span class='phase {cls}'>{esc(phase)}</span>"


def execution_url(project: str, domain: str, name: str) -> str:
    # The path flytekit's FlyteRemote.generate_console_url prints.
    return f"/console/projects/{esc(project)}/domains/{esc(domain)}/executions/{esc(name)}"


def index_page(executions: list[ExecutionSummary]) -> str:
    if not executions:
        rows = "<tr><td colspan='6' class='muted'>No executions yet. Start one with <code>pyflyte run --remote</code>.</td></tr>"
    else:
        rows = "".join(
            f"<tr><td><a href='{execution_url(e.project, e.domain, e.name)}'>{esc(e.name)}</a></td>"
            f"<td>{esc(e.project)}/{esc(e.domain)}</td><td>{esc(e.launch_plan)}</td><td>{phase_badge(e.phase)}</td>"
            f"<td>{fmt_time(e.created_at)}</td><td>{fmt_duration(e.duration)}</td></tr>"
            for e in executions)
    body = ("<h1>Recent executions</h1><table><tr><th>Execution</th><th>Project/domain</th><th>Launch plan</th>"
            f"<th>Phase</th><th>Created</th><th>Duration</th></tr>{rows}</table>")
    return layout("Executions", body)


def not_found_page(message: str) -> str:
    return layout("Not found", f"<h1>Not found</h1><p>{esc(message)}</p><p><a href='/console'>All recent executions</a></p>")


LinkFor = Callable[[str], "str | None"]


def execution_page(view: ExecutionView, link: LinkFor) -> str:
    fmt = HtmlFormatter(link)
    meta = "".join(f"<tr><td>{label}</td><td>{value}</td></tr>" for label, value in [
        ("Phase", phase_badge(view.phase)),
        ("Launch plan", esc(view.launch_plan) or "—"),
        ("Workflow", esc(view.workflow) or "—"),
        ("Created", fmt_time(view.created_at)),
        ("Started", fmt_time(view.started_at)),
        ("Duration", fmt_duration(view.duration)),
    ])
    parts = [f"<h1>{esc(view.project)} / {esc(view.domain)} / {esc(view.name)}</h1>",
             f"<table class='meta'>{meta}</table>"]
    if view.error:
        parts.append(f"<h2>Error</h2><div class='error'><pre>{esc(view.error)}</pre></div>")
    if view.abort_cause:
        parts.append(f"<h2>Aborted</h2><p>{esc(view.abort_cause)}</p>")
    parts.append(f"<h2>Inputs</h2>{_data(view.inputs, fmt)}")
    parts.append(f"<h2>Outputs</h2>{_data(view.outputs, fmt, 'none yet' if view.running else 'none')}")
    parts.append(f"<h2>Nodes ({view.node_count})</h2>")
    if view.nodes:
        rows = "".join(row for node in view.nodes for row in _node_rows(node, 0, fmt, link))
        parts.append("<table><tr><th>Node</th><th>Phase</th><th>Started</th><th>Duration</th><th>Attempts</th>"
                     f"<th>Data</th></tr>{rows}</table>")
    else:
        parts.append("<p class='muted'>No node executions yet.</p>")
    title = f"{view.name} ({view.phase})"
    return layout(title, f"<div id='content' data-running='{1 if view.running else 0}'>{''.join(parts)}</div>")


def _data(data: Data | None, fmt: HtmlFormatter, empty: str = "none") -> str:
    if data is None:
        return "<span class='muted'>not shown for executions this large</span>"
    if data.problem:
        return f"<span class='muted'>{esc(data.problem)}</span>"
    if data.literals is None or not data.literals.literals:
        return f"<span class='muted'>{esc(empty)}</span>"
    rows = "".join(f"<tr><td>{name}</td><td><pre>{value}</pre></td></tr>"
                   for name, value in render_literal_map(data.literals, fmt))
    return f"<table class='kv'>{rows}</table>"


def _node_rows(node: NodeView, depth: int, fmt: HtmlFormatter, link: LinkFor):
    label = esc(node.spec_node_id)
    if node.node_id != node.spec_node_id:
        label += f" <span class='muted'>({esc(node.node_id)})</span>"
    if node.cache_status:
        label += f" <span class='muted'>cache {esc(node.cache_status.lower())}</span>"
    error = f"<div class='error'><pre>{esc(node.error)}</pre></div>" if node.error else ""
    details = ""
    if node.inputs is not None or node.outputs is not None:
        deck = ""
        href = link(node.deck_uri) if node.deck_uri else None
        if href:
            deck = f"<p><a href='{esc(href)}'>Deck</a></p>"
        details = (f"<details id='node-{node.row_id}-data'><summary>inputs / outputs</summary>"
                   f"<b>Inputs</b>{_data(node.inputs, fmt)}<b>Outputs</b>{_data(node.outputs, fmt)}{deck}</details>")
    yield (f"<tr><td style='padding-left:{10 + 24 * depth}px'>{label}{error}</td><td>{phase_badge(node.phase)}</td>"
           f"<td>{fmt_time(node.started_at)}</td><td>{fmt_duration(node.duration)}</td>"
           f"<td>{_attempts(node.attempts)}</td><td>{details}</td></tr>")
    for child in node.children:
        yield from _node_rows(child, depth + 1, fmt, link)


def _attempts(attempts: list[AttemptView]) -> str:
    items = []
    for a in attempts:
        logs = " ".join(_log_link(name, uri) for name, uri in a.logs)
        line = f"#{a.retry_attempt} {phase_badge(a.phase)} {fmt_duration(a.duration)} {logs}"
        if a.error:
            line += f"<div class='muted'><pre>{esc(a.error)}</pre></div>"
        elif a.reason:
            line += f" <span class='muted'>{esc(a.reason)}</span>"
        items.append(f"<div>{line}</div>")
    return "".join(items)


def _log_link(name: str, uri: str) -> str:
    # Only web links become hrefs: a log URI is not allowed to run script in the console's origin.
    if uri.startswith(("http://", "https://", "/")):
        return f"<a href='{esc(uri)}'>{esc(name)}</a>"
    return f"{esc(name)}: {esc(uri)}"
