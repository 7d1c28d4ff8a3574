"""What the oldest supported flytekit registers and runs: hello, a diamond, a map task, a dynamic
workflow, a cached task and an approval gate."""

from datetime import timedelta

from flytekit import approve, dynamic, map_task, task, workflow


@task
def old_hello(name: str) -> str:
    return f"hello {name}"


@workflow
def old_hello_wf(name: str = "world") -> str:
    return old_hello(name=name)


@task
def old_inc(x: int) -> int:
    return x + 1


@task
def old_square(x: int) -> int:
    return x * x


@task
def old_sum(xs: list[int]) -> int:
    return sum(xs)


@workflow
def old_diamond_wf(x: int) -> int:
    top = old_inc(x=x)
    return old_sum(xs=[old_square(x=top), old_inc(x=top)])


@workflow
def old_map_wf(xs: list[int]) -> int:
    return old_sum(xs=map_task(old_square)(x=xs))


@dynamic
def old_fan(n: int) -> list[int]:
    return [old_square(x=i) for i in range(n)]


@workflow
def old_dynamic_wf(n: int) -> int:
    return old_sum(xs=old_fan(n=n))


@task(cache=True, cache_version="1")
def old_cached(x: int) -> int:
    return x * 100


@workflow
def old_cached_wf(x: int) -> int:
    return old_cached(x=x)


@workflow
def old_gate_wf(x: int) -> int:
    y = old_inc(x=x)
    return approve(y, "review", timeout=timedelta(minutes=5))
