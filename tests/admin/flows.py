"""flytekit tasks, workflows and launch plans the admin tests register (their names start tests.admin.flows)."""

from flytekit import CronSchedule, LaunchPlan, conditional, task, workflow


@task
def double(x: int) -> int:
    return x * 2


@task
def greet(name: str) -> str:
    return f"hello {name}"


@workflow
def pipeline(x: int = 3) -> int:
    return double(x=double(x=x))


pipeline_fixed = LaunchPlan.get_or_create(pipeline, name="admin_pipeline_fixed", fixed_inputs={"x": 4})
pipeline_hourly = LaunchPlan.get_or_create(pipeline, name="admin_pipeline_hourly", schedule=CronSchedule(schedule="@hourly"))


@workflow
def parent(y: int) -> int:
    return double(x=pipeline_fixed())


T_DOUBLE = f"{__name__}.double"
T_GREET = f"{__name__}.greet"
WF = f"{__name__}.pipeline"
WF_PARENT = f"{__name__}.parent"


@task
def add(a: int, b: int) -> int:
    return a + b


@workflow
def sum_of_doubles(a: int, b: int) -> int:
    return add(a=double(x=a), b=double(x=b))


@workflow
def sum_of_pairs(a: int, b: int) -> int:
    return add(a=add(a=a, b=b), b=double(x=b))


@workflow
def branchy(x: int = 1, outer: bool = True, inner: bool = True) -> int:
    """Nodes with several upstream nodes in branch arms, a nested branch and two subworkflows: flytekit
    lists those from a Python set, in a different order in each process."""
    a, b = double(x=x), double(x=x)
    return (
        conditional("outer")
        .if_(outer.is_true())
        .then(
            conditional("inner")
            .if_(inner.is_true())
            .then(add(a=a, b=b))
            .else_()
            .then(add(a=b, b=a)))
        .elif_(x > 10)
        .then(sum_of_doubles(a=a, b=b))
        .else_()
        .then(sum_of_pairs(a=b, b=a))
    )


WF_BRANCHY = f"{__name__}.branchy"
