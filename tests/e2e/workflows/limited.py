"""Launch plans with Flyte 1.16's concurrency policy over a workflow that holds until a marker file exists."""

import os
import time

from flytekit import LaunchPlan, task, workflow
from flytekit.models.concurrency import ConcurrencyLimitBehavior, ConcurrencyPolicy


@task
def hold(marker: str) -> str:
    while not os.path.exists(marker):
        time.sleep(0.1)
    return marker


@workflow
def held(marker: str) -> str:
    return hold(marker=marker)


one_at_a_time = LaunchPlan.get_or_create(
    held, name="one_at_a_time",
    concurrency=ConcurrencyPolicy(max_concurrency=1, behavior=ConcurrencyLimitBehavior.SKIP))
two_at_a_time = LaunchPlan.get_or_create(
    held, name="two_at_a_time",
    concurrency=ConcurrencyPolicy(max_concurrency=2, behavior=ConcurrencyLimitBehavior.SKIP))
