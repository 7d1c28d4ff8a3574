"""Compute tasks for flytelite's Kubernetes placement: a Spark task whose partitions report the pod they ran in
(Spark's executor pods), and a Ray, a Dask, a PyTorch and an MPI task that return nothing (their operators do
not run here; the tests write the status an operator would)."""

import socket
import sys

import flytekit
import flytekit.bin.entrypoint
from flytekit import Resources, task, workflow
from flytekitplugins.dask import Dask, Scheduler, WorkerGroup
from flytekitplugins.kfmpi import Launcher, MPIJob, Worker
from flytekitplugins.kfpytorch import PyTorch, RunPolicy
from flytekitplugins.kfpytorch import Worker as PyTorchWorker
from flytekitplugins.ray import HeadNodeConfig, RayJobConfig, WorkerNodeConfig
from flytekitplugins.spark import Spark


# The test image runs this environment, at the same paths: its Python and flytekit's entrypoint, where flytekit
# would name those of its own images (/opt/venv/...).
@task(task_config=Spark(spark_conf={
    "spark.executor.instances": "2", "spark.executor.cores": "1", "spark.executor.memory": "512m",
    "spark.kubernetes.executor.request.cores": "100m", "spark.flytelite.probe": "seen"},
    executor_path=sys.executable, applications_path=f"local://{flytekit.bin.entrypoint.__file__}"))
def where_spark_runs(partitions: int) -> list[str]:
    sess = flytekit.current_context().spark_session
    hosts = sess.sparkContext.parallelize(range(partitions), partitions).map(lambda _: socket.gethostname())
    return [socket.gethostname(), sess.conf.get("spark.flytelite.probe"), *sorted(set(hosts.collect()))]


@workflow
def spark_wf(partitions: int = 8) -> list[str]:
    return where_spark_runs(partitions=partitions)


@task(task_config=RayJobConfig(head_node_config=HeadNodeConfig(ray_start_params={"num-cpus": "1"}),
                               worker_node_config=[WorkerNodeConfig(group_name="g", replicas=2, min_replicas=1,
                                                                    max_replicas=3)],
                               runtime_env={"env_vars": {"X": "1"}}, shutdown_after_job_finishes=True,
                               ttl_seconds_after_finished=60))
def ray_job() -> None:
    pass


@task(task_config=Dask(scheduler=Scheduler(limits=Resources(cpu="1", mem="1Gi")),
                       workers=WorkerGroup(number_of_workers=3, limits=Resources(cpu="2", mem="2Gi"))))
def dask_job() -> None:
    pass


@task(task_config=PyTorch(worker=PyTorchWorker(replicas=2), run_policy=RunPolicy(backoff_limit=2)))
def pytorch_job() -> None:
    pass


@task(task_config=MPIJob(launcher=Launcher(replicas=1), worker=Worker(replicas=2), slots=2))
def mpi_job() -> None:
    pass


@workflow
def ray_wf():
    ray_job()


@workflow
def dask_wf():
    dask_job()


@workflow
def pytorch_wf():
    pytorch_job()


@workflow
def mpi_wf():
    mpi_job()
