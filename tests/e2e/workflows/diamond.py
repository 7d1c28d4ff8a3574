"""A diamond DAG passing typed values: int, float, str, bool, list, dict, dataclass, enum, Optional."""

import enum
from dataclasses import dataclass

from flytekit import task, workflow


class Color(enum.Enum):
    RED = "red"
    GREEN = "green"


@dataclass
class Point:
    x: int
    y: float
    label: str


@task
def start(n: int, scale: float) -> tuple[list[int], Point]:
    return list(range(n)), Point(x=n, y=n * scale, label="p")


@task
def left(values: list[int], color: Color) -> dict[str, int]:
    return {color.value: sum(values)}


@task
def right(point: Point, note: str | None) -> tuple[str, bool]:
    return f"{point.label}:{point.x}:{point.y}:{note}", note is None


@task
def join(totals: dict[str, int], text: str, flag: bool, point: Point) -> tuple[str, Point, int | None]:
    return f"{sorted(totals.items())}|{text}|{flag}", Point(x=point.x + 1, y=point.y, label="joined"), None


@workflow
def diamond_wf(n: int = 4, scale: float = 0.5, color: Color = Color.GREEN,
               note: str | None = None) -> tuple[str, Point, int | None]:
    values, point = start(n=n, scale=scale)
    totals = left(values=values, color=color)
    text, flag = right(point=point, note=note)
    return join(totals=totals, text=text, flag=flag, point=point)
