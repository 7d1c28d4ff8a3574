"""The two peer workflows in Prefect 3: flows of tasks submitted to the default task runner.

Run in Prefect's own venv with PREFECT_HOME set to a temporary folder: with no API URL configured,
Prefect starts its temporary local server (a subprocess on 127.0.0.1) as it does by default.
"""

from __future__ import annotations

import prefect
from prefect import flow, task
from timing import CHAIN, FAN_OUT, report


@task
def step(x: int) -> int:
    return x + 1


@flow
def chain() -> int:
    """CHAIN tasks, each given the previous one's future, so each waits for the one before."""
    x = step.submit(0)
    for _ in range(CHAIN - 1):
        x = step.submit(x)
    return x.result()


@flow
def fan_out() -> list[int]:
    """step mapped over FAN_OUT integers, the results gathered into a list."""
    return step.map(list(range(FAN_OUT))).result()


if __name__ == "__main__":
    report(prefect.__version__, chain, fan_out)
