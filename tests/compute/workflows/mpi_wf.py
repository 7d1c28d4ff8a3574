"""flytekitplugins-kfmpi's MPIJob task: its ranks, started by Open MPI's mpirun, each run the task."""

import os

from flytekit import task, workflow
from flytekitplugins.kfmpi import Launcher, MPIJob, Worker


@task(task_config=MPIJob(launcher=Launcher(replicas=1), worker=Worker(replicas=3), slots=1))
def ranks() -> str:
    # Every rank writes the task's outputs, as under the MPI operator: the same answer from each.
    return f"size={os.environ['OMPI_COMM_WORLD_SIZE']}"


@workflow
def mpi_wf() -> str:
    return ranks()
