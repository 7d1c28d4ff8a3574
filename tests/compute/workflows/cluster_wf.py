"""A Spark, a Ray and a Dask task that say which cluster they ran on."""

import flytekit
import ray
from flytekit import task, workflow
from flytekitplugins.dask import Dask
from flytekitplugins.ray import RayJobConfig
from flytekitplugins.spark import Spark


@ray.remote
def double(x: int) -> int:
    return 2 * x


@task(task_config=Spark(spark_conf={"spark.executor.instances": "1", "spark.cores.max": "1",
                                    "spark.executor.memory": "512m"}))
def spark_master() -> str:
    context = flytekit.current_context().spark_session.sparkContext
    return f"{context.master} {context.parallelize(range(4)).count()}"


@task(task_config=RayJobConfig(worker_node_config=[]))
def ray_cluster() -> str:
    return f"{ray.get_runtime_context().gcs_address} {ray.get(double.remote(2))}"


@task(task_config=Dask())
def dask_scheduler() -> str:
    from distributed import Client

    client = Client()
    # A builtin: the cluster's workers cannot import this module.
    return f"{client.scheduler.address} {client.submit(sum, [1, 2]).result()}"


@workflow
def cluster_wf() -> tuple[str, str, str]:
    return spark_master(), ray_cluster(), dask_scheduler()
