"""Gate nodes: sleep, approve, wait_for_input, and a gate that times out."""

from datetime import timedelta

from flytekit import approve, sleep, task, wait_for_input, workflow


@task
def gate_make(x: int) -> int:
    return x * 10


@task
def gate_report(v: int) -> str:
    return f"approved {v}"


@task
def gate_greet(title: str, x: int) -> str:
    return f"{title} #{x}"


@workflow
def gate_sleep_wf(x: int) -> int:
    nap = sleep(timedelta(seconds=2))
    y = gate_make(x=x)
    nap >> y
    return y


@workflow
def gate_approve_wf(x: int) -> str:
    y = gate_make(x=x)
    ok = approve(y, "review", timeout=timedelta(minutes=5))
    return gate_report(v=ok)


@workflow
def gate_input_wf(x: int) -> str:
    title = wait_for_input("title", timeout=timedelta(minutes=5), expected_type=str)
    return gate_greet(title=title, x=x)


@workflow
def gate_timeout_wf(x: int) -> int:
    y = gate_make(x=x)
    return approve(y, "never-answered", timeout=timedelta(seconds=2))
