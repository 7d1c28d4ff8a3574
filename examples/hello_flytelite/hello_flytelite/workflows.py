"""The example project's workflows: nothing here knows about flytelite."""

from flytekit import map_task, task, workflow


@task
def say_hello(name: str) -> str:
    return f"Hello, {name}!"


@workflow
def hello(name: str = "world") -> str:
    return say_hello(name=name)


@task
def square(x: int) -> int:
    return x * x


@task
def summarize(values: list[int]) -> tuple[int, float]:
    return sum(values), sum(values) / len(values)


@workflow
def squares_stats(xs: list[int]) -> tuple[int, float]:
    return summarize(values=map_task(square)(x=xs))


@task
def must_be_positive(x: int) -> int:
    if x <= 0:
        raise ValueError(f"{x} is not positive")
    return x
