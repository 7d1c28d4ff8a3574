"""Workflow shapes for node-executor tests (their tasks run in-process, never as flytekit code)."""

from __future__ import annotations

from dataclasses import dataclass

from flytekit import WorkflowFailurePolicy, task, workflow


@task
def inc(x: int) -> int:
    return x + 1


@task
def total(a: int, b: int, c: int) -> int:
    return a + b + c


@task
def slow(x: int) -> int:
    return x


@task(retries=2)
def retried(x: int) -> int:
    return x


@workflow
def fan_out(x: int) -> int:
    return total(a=inc(x=x), b=inc(x=x), c=inc(x=x))


@workflow
def five_slow(x: int) -> list[int]:
    return [slow(x=x), slow(x=x), slow(x=x), slow(x=x), slow(x=x)]


@workflow
def retry_wf(x: int) -> int:
    return retried(x=x)


@workflow
def chain_with_failure(x: int) -> int:
    a = inc(x=x)
    b = slow(x=a)
    return inc(x=b)


@dataclass
class Pair:
    left: int
    right: int


@task
def make_pair(x: int) -> Pair:
    return Pair(left=x, right=x)


@workflow
def attr_wf(x: int) -> int:
    p = make_pair(x=x)
    return inc(x=p.right)


@workflow(failure_policy=WorkflowFailurePolicy.FAIL_AFTER_EXECUTABLE_NODES_COMPLETE)
def keep_going(x: int) -> list[int]:
    return [inc(x=x), slow(x=x)]
