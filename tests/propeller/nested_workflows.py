"""Workflow shapes for the nested-execution tests: branches, subworkflows and a dynamic task.

Their tasks run in-process (tests/propeller/inprocess.py), never as flytekit code; the dynamic
task's futures are built by the test (see dynamic_spec) from these tasks' serialized templates.
"""

from __future__ import annotations

from flytekit import conditional, dynamic, task, workflow


@task
def nst_square(n: int) -> int:
    return n * n


@task
def nst_double(n: int) -> int:
    return 2 * n


@task
def nst_is_even(n: int) -> bool:
    return n % 2 == 0


@task
def nst_inc(x: int) -> int:
    return x + 1


@task
def nst_hold(x: int) -> int:
    return x


@task
def nst_total(xs: list[int]) -> int:
    return sum(xs)


@dynamic
def nst_fan(n: int) -> list[int]:
    return [nst_square(n=i) for i in range(n)]


@workflow
def nst_branches(x: int) -> int:
    even = nst_is_even(n=x)
    chosen = (
        conditional("outer")
        .if_(x > 10).then(nst_square(n=x))
        .elif_(even.is_true()).then(
            conditional("inner").if_(x == 4).then(nst_double(n=x)).else_().then(nst_square(n=x)))
        .elif_(x > 0).then(nst_double(n=x))
        .else_().fail("x must be positive")
    )
    return nst_inc(x=chosen)


@workflow
def nst_sub(a: int) -> int:
    return nst_double(n=nst_square(n=a))


@workflow
def nst_parent(x: int) -> int:
    return nst_inc(x=nst_sub(a=x))


@workflow
def nst_sub_two(a: int) -> list[int]:
    return [nst_hold(x=a), nst_square(n=a)]


@workflow
def nst_parent_two(x: int) -> list[int]:
    return nst_sub_two(a=x)


@workflow
def nst_dynamic(n: int) -> int:
    return nst_total(xs=nst_fan(n=n))


@workflow
def nst_sub_sub(a: int) -> int:
    return nst_sub(a=a)


@workflow
def nst_branch_to_sub(x: int) -> int:
    return conditional("pick").if_(x > 0).then(nst_sub_sub(a=x)).else_().then(nst_double(n=x))
