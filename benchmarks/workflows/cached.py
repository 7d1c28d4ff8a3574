from flytekit import task, workflow


@task(cache=True, cache_version="1")
def cached_step(x: int) -> int:
    return x + 1


@workflow
def cached_wf(x: int = 0) -> int:
    return cached_step(x=x)
