"""A chain of slow steps, long enough for the test to restart flytelite's engine replicas in its middle."""

import time

from flytekit import task, workflow


@task
def slow_add(x: int, y: int) -> int:
    time.sleep(5)
    return x + y


@workflow
def deploy_chain_wf(x: int = 0) -> int:
    a = slow_add(x=x, y=1)
    b = slow_add(x=a, y=2)
    c = slow_add(x=b, y=3)
    d = slow_add(x=c, y=4)
    e = slow_add(x=d, y=5)
    return slow_add(x=e, y=6)
