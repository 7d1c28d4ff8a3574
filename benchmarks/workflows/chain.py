from flytekit import task, workflow


@task
def step(x: int) -> int:
    return x + 1


@workflow
def chain5(x: int = 0) -> int:
    a = step(x=x)
    b = step(x=a)
    c = step(x=b)
    d = step(x=c)
    return step(x=d)
