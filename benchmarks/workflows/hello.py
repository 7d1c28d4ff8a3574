from flytekit import task, workflow


@task
def say_hello(name: str) -> str:
    return f"hello {name}"


@workflow
def hello_wf(name: str = "world") -> str:
    return say_hello(name=name)
