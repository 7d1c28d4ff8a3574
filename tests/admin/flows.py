"""flytekit tasks, workflows and launch plans the admin tests register (their names start tests.admin.flows)."""

from flytekit import CronSchedule, LaunchPlan, task, workflow


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
