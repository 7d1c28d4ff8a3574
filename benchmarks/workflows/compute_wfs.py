"""One small task per compute engine, for the compute rows (benchmarks/compute.py): each computes the same sum on
its engine."""

import flytekit
import ray
from flytekit import task, workflow
from flytekitplugins.dask import Dask, WorkerGroup
from flytekitplugins.ray import RayJobConfig, WorkerNodeConfig
from flytekitplugins.spark import Spark

N = 1000


@task(task_config=Spark(spark_conf={"spark.executor.instances": "2", "spark.executor.cores": "1"}))
def spark_sum() -> int:
    return flytekit.current_context().spark_session.sparkContext.parallelize(range(N), 2).sum()


@ray.remote
def part(start: int) -> int:
    return sum(range(start, min(start + 100, N)))


@task(task_config=RayJobConfig(worker_node_config=[WorkerNodeConfig(group_name="g", replicas=1)]))
def ray_sum() -> int:
    return sum(ray.get([part.remote(start) for start in range(0, N, 100)]))


@task(task_config=Dask(workers=WorkerGroup(number_of_workers=2)))
def dask_sum() -> int:
    from dask import bag
    from distributed import Client

    Client()
    return bag.from_sequence(range(N), npartitions=2).sum().compute()


@workflow
def spark_wf() -> int:
    return spark_sum()


@workflow
def ray_wf() -> int:
    return ray_sum()


@workflow
def dask_wf() -> int:
    return dask_sum()
