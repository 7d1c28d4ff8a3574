"""@eager workflows that call static subworkflows sharing a task: flytekit registers each subworkflow and
its tasks from inside the running eager task, so the second registers the shared task again."""

from flytekit import eager, task, workflow


@task
def es_add_one(x: int) -> int:
    return x + 1


@task
def es_double(x: int) -> int:
    return 2 * x


@workflow
def es_static_a(x: int) -> int:
    return es_double(x=es_add_one(x=x))


@workflow
def es_static_b(x: int) -> int:
    return es_add_one(x=es_add_one(x=x))


@eager
async def eager_a(x: int) -> int:
    return es_static_a(x=x)


@eager
async def eager_b(x: int) -> int:
    return es_static_b(x=x)
