"""An inline subworkflow end to end: its outputs become the node's, and a failing child's error
becomes the execution's."""

from flytekit import task, workflow


@task
def ns_square(n: int) -> int:
    return n * n


@task
def ns_check(n: int) -> int:
    if n > 100:
        raise ValueError(f"n={n} is too big")
    return n


@task
def ns_double(n: int) -> int:
    return 2 * n


@task
def ns_inc(x: int) -> int:
    return x + 1


@workflow
def ns_inner(a: int) -> int:
    return ns_double(n=ns_check(n=ns_square(n=a)))


@workflow
def nested_subworkflow_wf(x: int) -> int:
    return ns_inc(x=ns_inner(a=x))
