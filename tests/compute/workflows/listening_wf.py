"""One task per engine, one after another, each waiting with its engine up (for a test to look at the sockets the
engine listens on) until the file `<markers>/<engine>` exists, then computing something across it. Each notes
`start <engine>` in the journal once its engine is wholly up."""

import os
import time

import flytekit
import ray
import torch
import torch.distributed as dist
from flytekit import task, workflow
from flytekitplugins.dask import Dask, WorkerGroup
from flytekitplugins.kfmpi import Launcher, MPIJob, Worker
from flytekitplugins.kfpytorch import Elastic, PyTorch
from flytekitplugins.ray import RayJobConfig, WorkerNodeConfig
from flytekitplugins.spark import Spark


def _wait(markers: str, journal: str, who: str, note: bool = True) -> None:
    if note:
        with open(journal, "a") as f:
            f.write(f"start {who}\n")
    while not os.path.exists(os.path.join(markers, who)):
        time.sleep(0.2)


@ray.remote
def square(x: int) -> int:
    return x * x


@task(task_config=Spark(spark_conf={"spark.executor.instances": "1"}))
def spark_listens(markers: str, journal: str) -> int:
    session = flytekit.current_context().spark_session
    _wait(markers, journal, "spark")
    return session.sparkContext.parallelize(range(10)).count()


@task(task_config=RayJobConfig(worker_node_config=[WorkerNodeConfig(group_name="g", replicas=2)]))
def ray_listens(markers: str, journal: str, before: int) -> int:
    nodes = sum(1 for n in ray.nodes() if n["Alive"])
    _wait(markers, journal, "ray")
    return nodes * 100 + ray.get(square.remote(3))


@task(task_config=Dask(workers=WorkerGroup(number_of_workers=2)))
def dask_listens(markers: str, journal: str, before: int) -> int:
    from distributed import Client

    client = Client()
    client.wait_for_workers(2)
    _wait(markers, journal, "dask")
    return client.submit(sum, [2, 3]).result()


def _all_reduce(markers: str, journal: str, who: str) -> int:
    dist.init_process_group("gloo")
    _wait(markers, journal, who, note=dist.get_rank() == 0)
    value = torch.tensor([dist.get_rank() + 1.0])
    dist.all_reduce(value)
    dist.destroy_process_group()
    return int(value.item())


@task(task_config=PyTorch(num_workers=1))
def pytorch_listens(markers: str, journal: str, before: int) -> int:
    return _all_reduce(markers, journal, "pytorch")


@task(task_config=Elastic(nnodes=2, nproc_per_node=1))
def elastic_listens(markers: str, journal: str, before: int) -> int:
    return _all_reduce(markers, journal, "elastic")


@task(task_config=MPIJob(launcher=Launcher(replicas=1), worker=Worker(replicas=2), slots=1))
def mpi_listens(markers: str, journal: str, before: int) -> int:
    _wait(markers, journal, "mpi", note=os.environ.get("OMPI_COMM_WORLD_RANK") == "0")
    return int(os.environ["OMPI_COMM_WORLD_SIZE"])


@workflow
def listening_wf(markers: str, journal: str) -> tuple[int, int, int, int, int, int]:
    spark = spark_listens(markers=markers, journal=journal)
    ray_ = ray_listens(markers=markers, journal=journal, before=spark)
    dask = dask_listens(markers=markers, journal=journal, before=ray_)
    pytorch = pytorch_listens(markers=markers, journal=journal, before=dask)
    elastic = elastic_listens(markers=markers, journal=journal, before=pytorch)
    mpi = mpi_listens(markers=markers, journal=journal, before=elastic)
    return spark, ray_, dask, pytorch, elastic, mpi
