"""Branches whose condition reads a workflow input while the arm they take reads another node's output
(flytekit's own conditional_workflow.py, plus a nested branch); `Echo` arms pass a value through."""

from flytekit import conditional, task, workflow
from flytekit.core.task import Echo

bu_echo = Echo(name="bu_echo", inputs={"radius": float})


@task
def bu_area(radius: float) -> float:
    return 3.0 * radius * radius


@task
def bu_circumference(radius: float) -> float:
    return 6.0 * radius


@task
def bu_nop(radius: float) -> float:
    return radius


@workflow
def branch_upstream_wf(radius: float = 0.5, get_area: bool = False, get_circumference: bool = True):
    echoed_radius = bu_nop(radius=radius)
    (
        conditional("if_area")
        .if_(get_area.is_true())
        .then(bu_area(radius=radius))
        .else_()
        .then(bu_echo(echoed_radius))
    )
    (
        conditional("if_circumference")
        .if_(get_circumference.is_true())
        .then(bu_circumference(radius=echoed_radius))
        .else_()
        .then(bu_echo(echoed_radius))
    )


@workflow
def nested_upstream_wf(radius: float = 2.0, outer: bool = True, inner: bool = True) -> float:
    doubled = bu_circumference(radius=radius)
    return (
        conditional("outer")
        .if_(outer.is_true())
        .then(
            conditional("inner")
            .if_(inner.is_true())
            .then(bu_nop(radius=doubled))
            .else_()
            .then(bu_area(radius=doubled)))
        .else_()
        .then(bu_area(radius=radius))
    )
