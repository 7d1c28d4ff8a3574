"""Branches end to end: a condition on a workflow input, on a task output, an elif chain, a nested
conditional and a `.fail()` arm; the branch's result feeds a downstream task."""

from flytekit import conditional, task, workflow


@task
def nb_square(n: int) -> int:
    return n * n


@task
def nb_double(n: int) -> int:
    return 2 * n


@task
def nb_is_even(n: int) -> bool:
    return n % 2 == 0


@task
def nb_inc(x: int) -> int:
    return x + 1


@workflow
def nested_branches_wf(x: int) -> int:
    even = nb_is_even(n=x)
    chosen = (
        conditional("outer")
        .if_(x > 10).then(nb_square(n=x))
        .elif_(even.is_true()).then(
            conditional("inner").if_(x == 4).then(nb_double(n=x)).else_().then(nb_square(n=x)))
        .elif_(x > 0).then(nb_double(n=x))
        .else_().fail("x must be positive")
    )
    return nb_inc(x=chosen)
