"""A Spark, a Ray and a Dask task at once, each waiting for a marker file (so that a test can act while they
run) and noting its start in a journal (so that a test can count the runs)."""

import os
import time

import flytekit
import ray
from flytekit import task, workflow
from flytekitplugins.dask import Dask, WorkerGroup
from flytekitplugins.ray import RayJobConfig, WorkerNodeConfig
from flytekitplugins.spark import Spark


def _wait(marker: str, journal: str, who: str) -> None:
    with open(journal, "a") as f:
        f.write(f"start {who}\n")
    while not os.path.exists(marker):
        time.sleep(0.2)


@ray.remote
def square(x: int) -> int:
    return x * x


@task(task_config=Spark(spark_conf={"spark.executor.instances": "1"}))
def spark_waits(marker: str, journal: str) -> int:
    _wait(marker, journal, "spark")
    return flytekit.current_context().spark_session.sparkContext.parallelize(range(10)).count()


@task(task_config=RayJobConfig(worker_node_config=[WorkerNodeConfig(group_name="g", replicas=1)]))
def ray_waits(marker: str, journal: str) -> int:
    _wait(marker, journal, "ray")
    return ray.get(square.remote(3))


@task(task_config=Dask(workers=WorkerGroup(number_of_workers=1)))
def dask_waits(marker: str, journal: str) -> int:
    from distributed import Client

    _wait(marker, journal, "dask")
    return Client().submit(lambda: 5).result()


@workflow
def engines_wf(marker: str, journal: str) -> tuple[int, int, int]:
    return spark_waits(marker=marker, journal=journal), ray_waits(marker=marker, journal=journal), \
        dask_waits(marker=marker, journal=journal)


@task(task_config=Dask(workers=WorkerGroup(number_of_workers=2)))
def dask_loses_a_worker(marker: str, journal: str) -> int:
    """Waits on its first attempt (a test kills a worker meanwhile); the retry computes."""
    from distributed import Client

    if os.environ.get("FLYTE_ATTEMPT_NUMBER", "0") == "0":
        _wait(marker, journal, "dask")
    return Client().submit(sum, [2, 3]).result()


@workflow
def lost_worker_wf(marker: str, journal: str) -> int:
    return dask_loses_a_worker(marker=marker, journal=journal)
