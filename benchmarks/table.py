"""The results table (markdown): row, measured median, goal, met?, runs, baseline(s)."""

from __future__ import annotations

from benchmarks.common import Row, fmt


def render(rows: list[Row]) -> str:
    lines = ["| row | measured median | goal | met? | runs | baseline(s) |", "| --- | --- | --- | --- | --- | --- |"]
    for row in rows:
        met = {True: "yes", False: "**no**", None: "—"}[row.met]
        name = f"{row.name} <br>*{row.note}*" if row.note else row.name
        lines.append(f"| {name} | {fmt(row.median, row.unit)} | {row.goal or '—'} | {met} | {row.runs} | "
                     f"{'<br>'.join(row.baselines) or '—'} |")
    return "\n".join(lines) + "\n"
