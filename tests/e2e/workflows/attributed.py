"""Workflows whose task reports an environment variable its execution was given, and a launch plan with a max
parallelism of its own (matchable attributes' precedence)."""

import os

from flytekit import LaunchPlan, task, workflow


@task
def env_of(name: str) -> str:
    return os.environ.get(name, "")


@workflow
def env_wf(name: str = "X") -> str:
    return env_of(name=name)


@workflow
def other_env_wf(name: str = "X") -> str:
    return env_of(name=name)


env_lp = LaunchPlan.get_or_create(env_wf, name="env_lp", max_parallelism=3)
