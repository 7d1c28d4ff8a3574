"""A task that reports which API its process was told to call (eager workflows and FlyteRemote in a task
use it)."""

import os

from flytekit import task, workflow


@task
def platform_url() -> str:
    return os.environ.get("FLYTE_PLATFORM_URL", "")


@workflow
def platform_wf() -> str:
    return platform_url()
