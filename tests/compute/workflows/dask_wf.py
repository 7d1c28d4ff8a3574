"""flytesnacks' k8s_dask_plugin example, and a Dask task whose user code fails."""

from dask import array as da
from flytekit import Resources, task, workflow
from flytekitplugins.dask import Dask, WorkerGroup


@task(task_config=Dask(workers=WorkerGroup(number_of_workers=2, limits=Resources(cpu="1", mem="1Gi"))))
def hello_dask(size: int) -> float:
    from distributed import Client

    client = Client()
    assert len(client.scheduler_info()["workers"]) <= 2
    array = da.random.random(size)
    return float(client.submit(lambda x: x.mean(), array).result().compute())


@task(task_config=Dask(workers=WorkerGroup(number_of_workers=1)))
def count_workers() -> int:
    from distributed import Client

    client = Client()
    client.wait_for_workers(1, timeout=120)
    return len(client.scheduler_info()["workers"])


@workflow
def dask_wf(size: int = 1000) -> tuple[float, int]:
    return hello_dask(size=size), count_workers()
