"""The execution page: summary, actions, pending signals, graph, node list, timeline, data, logs.

Rendered on the server from console.views; while the execution runs, the page
script re-fetches it and swaps the regions marked `data-live` (a region being
typed in is left alone), so the graph's colours, the node list and the timeline
follow the engine. Buttons call the REST API (`/api/v1/...`).
"""

from __future__ import annotations

import json
from datetime import datetime, timedelta
from urllib.parse import quote

from flytelite.compiler import type_to_str
from flytelite.console.dag import node_label, render_dag
from flytelite.console.forms import widget_for
from flytelite.console.gantt import render_gantt
from flytelite.console.layout import (
    TERMINAL,
    LinkFor,
    data_table,
    entity_url,
    error_block,
    esc,
    execution_url,
    fmt_duration,
    fmt_time,
    layout,
    log_link,
    log_panel,
    may,
    phase_badge,
    tags_and_labels,
)
from flytelite.console.literals import HtmlFormatter, render_literal
from flytelite.console.views import ExecutionView, NodeView, SignalView
from flytelite.idl.ids import END_NODE, START_NODE

# Subworkflows and dynamic workflows of more nodes than this are not drawn.
MAX_GRAPH_NODES = 200
# A node with more children than this lists them only when asked (a wide dynamic node, a subworkflow's many).
COLLAPSED_OVER = 20


def execution_page(view: ExecutionView, link: LinkFor, now: datetime) -> str:
    fmt = HtmlFormatter(link)
    ident = json.dumps({"project": view.project, "domain": view.domain, "name": view.name})
    parts = [f"<div id='summary' data-live>{_summary(view)}</div>"]
    parts.append(f"<section id='signals' data-live>{_signals(view)}</section>")
    if view.compiled is not None:
        top = {n.node_id: n.phase for n in view.nodes}
        # The list hides start and end nodes (as FlyteConsole does); the graph shows them with the run.
        if view.started_at is not None:
            top[START_NODE] = "SUCCEEDED"
        if view.phase == "SUCCEEDED":
            top[END_NODE] = "SUCCEEDED"
        parts.append(f"<h2>Graph</h2><p class='muted'>Click a node for its details.</p>"
                     f"<div class='dag' id='dag' data-live>{render_dag(view.compiled, top)}</div>"
                     f"<div id='graphs' data-live>{_graphs(view.nodes)}</div>")
    here = execution_url(view.project, view.domain, view.name)
    rows = "".join(row for node in view.nodes for row in _node_rows(node, 0, fmt, link, here))
    nodes = ("<table id='nodes'><tr><th>Node</th><th>Phase</th><th>Started</th><th>Duration</th><th>Attempts</th>"
             f"<th>Data</th></tr>{rows}</table>" if view.nodes else "<p class='muted'>No node executions yet.</p>")
    parts.append(f"<div id='node-list' data-live><h2>Nodes ({view.node_count})</h2>{nodes}</div>")
    end = view.started_at + timedelta(seconds=view.duration) if view.started_at and view.duration else now
    parts.append(f"<h2>Timeline</h2><div class='gantt' id='gantt' data-live>"
                 f"{render_gantt(view.nodes, view.started_at, end)}</div>")
    parts.append(f"<div id='data' data-live><h2>Inputs</h2>{data_table(view.inputs, fmt)}<h2>Outputs</h2>"
                 f"{data_table(view.outputs, fmt, 'none yet' if view.running else 'none')}</div>")
    body = (f"<div id='content' data-running='{1 if view.running else 0}' data-execution='{esc(ident)}'>"
            f"{''.join(parts)}</div>{_node_panel()}{log_panel()}")
    return layout(f"{view.name} ({view.phase})", body, view.project, view.domain)


def _summary(view: ExecutionView) -> str:
    lp = (f"<a href='{esc(entity_url('launch_plan', *view.launch_plan_id))}'>{esc(view.launch_plan)}</a>"
          if view.launch_plan_id else esc(view.launch_plan) or "—")
    wf = (f"<a href='{esc(entity_url('workflow', *view.workflow_id))}'>{esc(view.workflow)}</a>"
          if view.workflow_id else esc(view.workflow) or "—")
    meta = "".join(f"<tr><td>{label}</td><td>{value}</td></tr>" for label, value in [
        ("Phase", f"<span id='execution-phase'>{phase_badge(view.phase)}</span>"),
        ("Launch plan", lp), ("Workflow", wf), ("Mode", esc(view.mode.lower()) + _reference(view)),
        ("Tags and labels", tags_and_labels(view.tags, view.labels) or "—"),
        ("Created", fmt_time(view.created_at)), ("Started", fmt_time(view.started_at)),
        ("Duration", fmt_duration(view.duration)),
    ])
    buttons = []
    if not may("launch", view.project, view.domain):
        pass  # the caller may only look
    elif view.running:
        buttons.append("<button class='danger' data-action='terminate'>Terminate</button>")
    else:
        here = execution_url(view.project, view.domain, view.name)
        buttons.append(f"<a class='button' data-relaunch href='{esc(here)}/relaunch'>Relaunch</a>")
        if view.phase in ("FAILED", "ABORTED", "TIMED_OUT"):
            buttons.append("<button class='secondary' data-action='recover'>Recover</button>")
        buttons.append("<button class='secondary' data-action='unarchive'>Unarchive</button>" if view.archived else
                       "<button class='secondary' data-action='archive'>Archive</button>")
    archived = " <span class='tag archived'>archived</span>" if view.archived else ""
    parts = [f"<h1>{esc(view.project)} / {esc(view.domain)} / {esc(view.name)}{archived}</h1>",
             f"<div class='actions'>{''.join(buttons)}<span class='action-result'></span></div>",
             _terminate_form() if view.running else "",
             f"<table class='meta'>{meta}</table>"]
    if view.error:
        parts.append(f"<h2>Error</h2><div class='error'><pre>{esc(view.error)}</pre></div>")
    if view.abort_cause:
        parts.append(f"<h2>Aborted</h2><p>{esc(view.abort_cause)}</p>")
    return "".join(parts)


def _graphs(nodes: list[NodeView]) -> str:
    """The graph of each subworkflow, dynamic workflow and branch (its arms) the execution ran, shown when asked for
    from its node's panel; those of more than MAX_GRAPH_NODES nodes are left to the node list."""
    parts = []
    stack = list(reversed(nodes))
    while stack:
        node = stack.pop()
        stack.extend(reversed(node.children))
        if node.graph is None:
            continue
        size = len(node.graph.template.nodes)
        phases = {child.spec_node_id: child.phase for child in node.children}  # a retry's children come last
        if node.phase == "SUCCEEDED":
            phases[END_NODE] = "SUCCEEDED"
        drawn = (render_dag(node.graph, phases) if size <= MAX_GRAPH_NODES else
                 f"<p class='muted'>{size} nodes: too many to draw; the node list has each of them.</p>")
        parts.append(f"<div class='dag subdag' data-graph-of='{esc(node.node_id)}' hidden><h3>Inside "
                     f"{node_label(node)}</h3>{drawn}</div>")
    return "".join(parts)


def _node_panel() -> str:
    """The panel a click on a graph's node opens beside the page (filled by the page script from its row)."""
    return ("<div id='node-panel'><div class='bar'><b id='node-title'></b><button class='secondary' "
            "id='node-close'>Close</button></div><div class='node-body'></div></div>")


def _reference(view: ExecutionView) -> str:
    if not view.reference:
        return ""
    href = execution_url(view.project, view.domain, view.reference)
    return f" of <a class='reference' href='{esc(href)}'>{esc(view.reference)}</a>"


def _terminate_form() -> str:
    """Asked before terminating: why (the execution keeps it as its abort cause)."""
    return ("<form class='terminate' hidden><label>Terminate this execution? Say why: <input name='cause' size='50' "
            "placeholder='the cause, kept with the execution'></label> <button class='danger' type='submit'>"
            "Terminate</button> <button type='button' class='secondary' data-cancel-terminate>Cancel</button>"
            "<div class='terminate-result'></div></form>")


def _signals(view: ExecutionView) -> str:
    if not view.signals:
        return ""
    settable = may("launch", view.project, view.domain)
    rows = "".join(_signal_row(s, view.running, settable) for s in view.signals)
    return ("<h2>Signals</h2><table><tr><th>Signal</th><th>Type</th><th>Value</th></tr>" + rows + "</table>")


def _signal_row(s: SignalView, running: bool, settable: bool) -> str:
    type_text = type_to_str(s.type)
    attrs = f"data-signal='{esc(s.signal_id)}'"
    if s.value is not None:
        value = f"<pre>{esc(render_literal(s.value))}</pre>"
    elif not running:
        value = "<span class='muted'>never set</span>"
    elif not settable:
        value = "<span class='muted'>not set yet</span>"
    elif s.type.WhichOneof("type") == "simple" and widget_for(s.type).kind == "bool":
        value = ("<button data-signal-approve='true'>Approve</button> "
                 "<button class='danger' data-signal-approve='false'>Reject</button>")
    else:
        value = (f"<form class='signal-form' {attrs}><input name='value' placeholder='{esc(type_text)}' "
                 "size='30'> <button type='submit'>Set value</button></form>")
    return (f"<tr {attrs}><td>{esc(s.signal_id)}</td><td><span class='tag'>{esc(type_text)}</span></td>"
            f"<td>{value}<div class='signal-result'></div></td></tr>")


def _node_rows(node: NodeView, depth: int, fmt: HtmlFormatter, link: LinkFor, here: str,
               ancestors: tuple[str, ...] = (), shown: bool = True):
    """The node's row and its children's; `here` is the execution page's URL. The children of a node with more
    than COLLAPSED_OVER of them start hidden (`shown` False), behind a button that shows and hides them."""
    label = node_label(node)
    is_open = len(node.children) <= COLLAPSED_OVER
    if not is_open:
        label += (f" <button class='secondary toggle' data-toggle='{esc(node.node_id)}'>show {len(node.children)} "
                  "nodes</button>")
    if node.cache_status:
        label += f" <span class='tag cache'>cache {esc(node.cache_status.lower())}</span>"
    if node.cache_source is not None:
        label += (f" <a class='cache-source' href='{esc(execution_url(*node.cache_source))}'>from "
                  f"{esc(node.cache_source[2])}</a>")
    error = error_block(node.error)
    deck_href = link(node.deck_uri) if node.deck_uri else None
    details = ""
    if deck_href:
        details = f"<a class='button deck' href='{esc(deck_href)}' target='_blank'>Deck</a>"
    if node.inputs is not None or node.outputs is not None:
        no_outputs = ("none: the node failed" if node.phase in ("FAILED", "TIMED_OUT") else
                      "none: the node was aborted" if node.phase == "ABORTED" else "none yet"
                      if node.phase not in TERMINAL else "none")
        details += (f"<details id='node-{node.row_id}-data'><summary>inputs / outputs</summary>"
                    f"<h4>Inputs</h4>{data_table(node.inputs, fmt)}"
                    f"<h4>Outputs</h4>{data_table(node.outputs, fmt, no_outputs)}"
                    f"{_flyte_urls(node, bool(deck_href))}</details>")
    tree = f" data-spec='{esc(node.spec_node_id)}' data-parent='{esc(ancestors[-1] if ancestors else '')}'"
    if ancestors:
        tree += f" data-ancestors='{esc(' '.join(ancestors))}'"
    if not is_open:
        tree += " data-open='0'"
    yield (f"<tr data-node-row='{esc(node.node_id)}' data-phase='{esc(node.phase)}'{tree}{'' if shown else ' hidden'}>"
           f"<td style='padding-left:{10 + 24 * depth}px'>{label}{error}</td><td>{phase_badge(node.phase)}</td>"
           f"<td>{fmt_time(node.started_at)}</td><td>{fmt_duration(node.duration)}</td>"
           f"<td>{_attempts(node, here)}</td><td>{details}</td></tr>")
    for child in node.children:
        yield from _node_rows(child, depth + 1, fmt, link, here, (*ancestors, node.node_id), shown and is_open)


def _flyte_urls(node: NodeView, has_deck: bool) -> str:
    """The node's flyte:// URIs, which FlyteRemote.get() and `pyflyte` resolve (DataProxyService.GetData)."""
    kinds = [("inputs", "i"), ("outputs", "o")] + ([("deck", "d")] if has_deck else [])
    rows = "".join(f"<div>{what} <code>{esc(node.flyte_url + '/' + suffix)}</code> <button class='secondary' "
                   f"data-copy='{esc(node.flyte_url + '/' + suffix)}'>copy</button></div>"
                   for what, suffix in kinds)
    return f"<div class='flyte-urls'>{rows}</div>" if node.flyte_url else ""


def _attempts(node: NodeView, here: str) -> str:
    items = []
    for a in node.attempts:
        logs = " ".join(log_link(name, uri, a.phase not in TERMINAL) for name, uri in a.logs)
        line = f"#{a.retry_attempt} {phase_badge(a.phase)} {fmt_duration(a.duration)} {logs}"
        if a.items:
            counts = ", ".join(f"{n} {esc(p.lower())}" for p, n in sorted(a.items.items()))
            total = sum(a.items.values())
            latest = a is node.attempts[-1]
            href = f"{here}/nodes/{quote(node.node_id, safe='')}/items" + ("" if latest else f"?attempt={a.retry_attempt}")
            line += (f"<div class='items' data-items='{total}'>map items: {counts} "
                     f"<a class='items-link' href='{esc(href)}'>see the items</a></div>")
        if a.error:
            line += error_block(a.error, "muted")
        elif a.ended:
            line += f" <span class='muted'>{esc(a.phase.lower())}</span>"
        elif a.reason:
            line += f" <span class='muted'>{esc(a.reason)}</span>"
        if a.ended and a.reasons:
            history = "".join(f"<li>{fmt_time(when)} {esc(message)}</li>" for when, message in a.reasons)
            line += f"<details class='reasons'><summary>reasons ({len(a.reasons)})</summary><ul>{history}</ul></details>"
        items.append(f"<div>{line}</div>")
    return "".join(items)
