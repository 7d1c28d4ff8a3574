"""What the console bench renders: a wide map task and a wide dynamic workflow of empty tasks."""

from flytekit import dynamic, map_task, task, workflow


@task
def console_items(n: int) -> list[int]:
    return list(range(n))


@task
def console_leaf(x: int) -> int:
    return x


@workflow
def console_map_wf(n: int = 10000) -> list[int]:
    return map_task(console_leaf)(x=console_items(n=n))


@dynamic
def console_fan(n: int) -> None:
    for i in range(n):
        console_leaf(x=i)


@workflow
def console_dynamic_wf(n: int = 2000) -> None:
    console_fan(n=n)
