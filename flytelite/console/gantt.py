"""The execution timeline: one bar per node and per task attempt (a Flyte 2 run's: per action), placed by start
time and duration (pure).

Bars are positioned in percent of the span from the execution's start to its
end (or now, while it runs), so the chart needs no script and no fixed width.
"""

from __future__ import annotations

import html
import re
from datetime import datetime, timedelta

from flytelite.console.dag import node_label
from flytelite.console.layout import esc, fmt_duration, phase_class
from flytelite.console.views import NodeView

MAX_ROWS = 300


# A bar's row: its label (HTML), phase, start, duration in seconds, key (data-gantt) and whether it is an
# attempt's (drawn under its node's).
Row = tuple[str, str, datetime | None, float | None, str, bool]


def render_gantt(nodes: list[NodeView], start: datetime | None, end: datetime | None) -> str:
    rows: list[Row] = []
    _collect(nodes, 0, rows)
    return render_rows(rows, start, end)


def render_rows(rows: list[Row], start: datetime | None, end: datetime | None) -> str:
    """The chart of `rows` (see Row) from `start` (else the first row's) to `end` (else the last row's)."""
    starts = [r[2] for r in rows if r[2] is not None]
    if not starts:
        return "<p class='muted'>Nothing has started yet.</p>"
    t0 = min([start] + starts) if start is not None else min(starts)
    ends = [r[2] + timedelta(seconds=r[3] or 0) for r in rows if r[2] is not None]
    t1 = max([e for e in (end,) if e is not None] + ends)
    span = max((t1 - t0).total_seconds(), 0.001)
    parts = [f"<div class='axis'><span>0s</span><span>{fmt_duration(span / 2)}</span>"
            f"<span>{fmt_duration(span)}</span></div>"]
    for label, phase, started, duration, key, is_attempt in rows[:MAX_ROWS]:
        bar = ""
        if started is not None:
            left = (started - t0).total_seconds() / span * 100
            width = max((duration or 0) / span * 100, 0.3)
            bar = (f"<div class='bar {phase_class(phase)}' style='left:{left:.2f}%;width:{min(width, 100 - left):.2f}%'"
                   f" title='{esc(_text(label))}: {esc(phase)}, {fmt_duration(duration)}'></div>")
        cls = "row attempt" if is_attempt else "row"
        parts.append(f"<div class='{cls}' data-gantt='{esc(key)}'><div class='label'>{label}</div>"
                    f"<div class='track'>{bar}</div></div>")
    if len(rows) > MAX_ROWS:
        parts.append(f"<p class='muted'>{len(rows) - MAX_ROWS} more rows not shown.</p>")
    return "".join(parts)


def _text(label: str) -> str:
    """A row's label (HTML) as plain text."""
    return html.unescape(re.sub(r"<[^>]+>", "", label)).replace("\xa0", " ").strip()


def _collect(nodes: list[NodeView], depth: int, rows: list) -> None:
    indent = "&nbsp;" * (3 * depth)
    for node in nodes:
        rows.append((f"{indent}{node_label(node)}", node.phase, node.started_at, node.duration, node.node_id,
                     False))
        for a in node.attempts:
            rows.append((f"{indent}&nbsp;&nbsp;&nbsp;<span class='muted'>attempt {a.retry_attempt}</span>", a.phase,
                         a.started_at, a.duration, f"{node.node_id}#{a.retry_attempt}", True))
        _collect(node.children, depth + 1, rows)
