"""The results table (markdown): row, measured median, goal, met?, runs, baseline(s).

A row without values (a section that could not run here) shows "not measured" and its note says why.
"""

from __future__ import annotations

from benchmarks.common import Row, fmt


def render(rows: list[Row]) -> str:
    lines = ["| row | measured median | goal | met? | runs | baseline(s) |", "| --- | --- | --- | --- | --- | --- |"]
    for row in rows:
        met = {True: "yes", False: "**no**", None: "—"}[row.met]
        name = f"{row.name} <br>*{row.note}*" if row.note else row.name
        measured = fmt(row.median, row.unit) if row.values else "not measured"
        lines.append(f"| {name} | {measured} | {row.goal or '—'} | {met} | {row.runs} | "
                     f"{'<br>'.join(row.baselines) or '—'} |")
    return "\n".join(lines) + "\n"
