"""One workflow with a node of every kind: a task, a subworkflow, a branch, a dynamic task, a launch plan, a
sleep gate and a map task (GetExecutionMetrics' spans of each)."""

from datetime import timedelta

from flytekit import LaunchPlan, conditional, dynamic, map_task, sleep, task, workflow


@task
def inc(x: int) -> int:
    return x + 1


@workflow
def sub(x: int) -> int:
    return inc(x=inc(x=x))


@dynamic
def fan(n: int) -> list[int]:
    return [inc(x=i) for i in range(n)]


@workflow
def child(x: int) -> int:
    return inc(x=x)


child_lp = LaunchPlan.get_or_create(child, name="all_kinds_child")


@workflow
def all_kinds_wf(x: int = 1) -> int:
    a = inc(x=x)
    b = sub(x=a)
    c = conditional("pick").if_(b > 0).then(inc(x=b)).else_().then(inc(x=0))
    d = fan(n=2)
    e = child_lp(x=c)
    pause = sleep(timedelta(seconds=0.1))
    map_task(inc)(x=d)
    e >> pause
    return e
