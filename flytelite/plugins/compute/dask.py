"""flytekitplugins-dask's `dask` tasks (flyteplugins' k8s/dask plugin, which the Dask operator's DaskJob runs):
a scheduler and `number_of_workers` workers, each with the threads and memory of the workers' resources (dask
worker's --nthreads, the CPU limit rounded up, and --memory-limit, as flyteplugins passes them), and the task as
the job runner with the scheduler's address in DASK_SCHEDULER_ADDRESS, which `distributed.Client()` reads."""

from __future__ import annotations

from flyteidl.core import tasks_pb2
from flyteidl.plugins import dask_pb2

from flytelite.plugins.compute.plugin import EngineProcess
from flytelite.plugins.machinery.core import TaskExecutionContext
from flytelite.plugins.machinery.taskspec import cores_of, custom, fits, quantity, resource

CPU, MEMORY = tasks_pb2.Resources.CPU, tasks_pb2.Resources.MEMORY


class DaskProcess(EngineProcess):
    id = "dask"
    task_types = ("dask",)
    program = "dask"
    package = "flytekitplugins-dask (with dask[distributed])"
    role = "job runner"

    def shape(self, tctx: TaskExecutionContext) -> dict:
        address = self.ctx.config.dask.scheduler_address
        if address:
            return {"engine": "dask", "address": address}
        job = custom(tctx.task, dask_pb2.DaskJob)
        workers = job.workers.number_of_workers or 1
        resources = job.workers.resources
        threads = cores_of(resource(resources, CPU), 1)
        memory = resource(resources, MEMORY)
        fits(f"{workers} Dask workers of {threads} threads", workers * threads,
             workers * quantity(memory) if memory else 0)
        return {"engine": "dask", "workers": workers, "nthreads": threads, "memory_limit": memory or "auto"}
