"""flytekitplugins-kfmpi's `mpi` tasks (flyteplugins' k8s/kfoperators/mpi plugin, which the MPI operator runs as
an MPIJob) with Open MPI on this machine: the launcher's command, flytekit's `mpirun … -np <workers x slots>
python <entrypoint> <the task's command>`, runs as it would in the launcher pod, its ranks on this machine instead
of the workers' pods (more ranks than processors are allowed, as slots are on a worker). Each rank but the
first starts in a folder of its own, where a fast-registered task unpacks its code. The ranks' output is the
launcher's log, as mpirun gathers it.

Task type version 1 is the kubeflow config (replica specs with `common`), version 0 the older one."""

from __future__ import annotations

import shutil

from flyteidl.plugins import mpi_pb2
from flyteidl.plugins.kubeflow import mpi_pb2 as kubeflow

from flytelite.plugins.compute.plugin import EngineProcess
from flytelite.plugins.machinery.core import TaskExecutionContext
from flytelite.plugins.machinery.taskspec import BadShape, custom


class MPIProcess(EngineProcess):
    id = "mpi"
    task_types = ("mpi",)
    role = "launcher"
    # The task's command is mpirun's, not flytekit's entrypoint.
    flytekit_entrypoint_only = False

    def shape(self, tctx: TaskExecutionContext) -> dict:
        if tctx.task.task_type_version == 0:
            workers = custom(tctx.task, mpi_pb2.DistributedMPITrainingTask).num_workers
        else:
            spec = custom(tctx.task, kubeflow.DistributedMPITrainingTask, versions=(1,)).worker_replicas
            workers = spec.common.replicas if spec.HasField("common") else spec.replicas
        if workers <= 0:
            raise BadShape("number of workers must be greater than 0")
        if "-np" not in list(tctx.container.command) + list(tctx.container.args):
            raise BadShape("its command is not an `mpirun … -np N …` line (flytekitplugins-kfmpi's)")
        return {"engine": "mpi"}

    def missing(self, interpreter: str) -> str | None:
        if shutil.which("mpirun") is None:
            return "Open MPI's mpirun on this machine, and none is on PATH (Debian: apt install openmpi-bin)"
        return None
