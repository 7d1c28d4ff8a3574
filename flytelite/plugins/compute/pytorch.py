"""flytekitplugins-kfpytorch's `pytorch` tasks (flyteplugins' k8s/kfoperators/pytorch plugin, which the training
operator runs as a PyTorchJob), as processes of this machine, one per replica, each running the task's command:

- `PyTorch(num_workers=N)`: a master and N workers, with the variables the operator gives each replica's
  container (MASTER_ADDR, MASTER_PORT, WORLD_SIZE, RANK) for `torch.distributed.init_process_group`.
- `Elastic(nnodes=N, ...)` with N > 1: N nodes that meet at a c10d rendezvous on this machine
  (PET_RDZV_ENDPOINT, PET_NNODES), where flytekit's own elastic launch starts each node's processes.
  (`Elastic(nnodes=1)` is a python-task: flytekit launches its processes in the task's own.)

Task type version 1 is the kubeflow config (replica specs with `common`), version 0 the older one (`workers`).
As under the operator, every replica writes to the attempt's output prefix; the attempt fails with the first
replica that fails.
"""

from __future__ import annotations

from flyteidl.plugins import pytorch_pb2
from flyteidl.plugins.kubeflow import pytorch_pb2 as kubeflow

from flytelite.plugins.compute.plugin import EngineProcess
from flytelite.plugins.machinery.core import TaskExecutionContext
from flytelite.plugins.machinery.taskspec import BadShape, custom, fits


class PyTorchProcess(EngineProcess):
    id = "pytorch"
    task_types = ("pytorch",)
    program = "torchrun"
    package = "flytekitplugins-kfpytorch (with torch)"
    role = "master"

    def shape(self, tctx: TaskExecutionContext) -> dict:
        if tctx.task.task_type_version == 0:
            old = custom(tctx.task, pytorch_pb2.DistributedPyTorchTrainingTask)
            workers, elastic = old.workers, old.elastic_config if old.HasField("elastic_config") else None
            masters = 0 if elastic is not None else 1
        else:
            job = custom(tctx.task, kubeflow.DistributedPyTorchTrainingTask, versions=(1,))
            workers = _replicas(job.worker_replicas)
            elastic = job.elastic_config if job.HasField("elastic_config") else None
            # The operator runs one master, whatever is asked, and none for an elastic job.
            masters = 0 if elastic is not None else 1
        if elastic is not None:
            nodes = max(workers, elastic.max_replicas, 1)
            fits(f"{nodes} PyTorch nodes of {elastic.nproc_per_node or 1} processes",
                 nodes * (elastic.nproc_per_node or 1), 0)
            return {"engine": "pytorch", "replicas": nodes, "elastic": True,
                    "min_nodes": elastic.min_replicas or nodes}
        if workers < 0:
            raise BadShape(f"a PyTorch job needs 0 or more workers, not {workers}")
        return {"engine": "pytorch", "replicas": masters + workers, "elastic": False}


def _replicas(spec: kubeflow.DistributedPyTorchTrainingReplicaSpec) -> int:
    """A replica spec's count: `common`'s, else the deprecated field's (as flyteplugins reads them)."""
    return spec.common.replicas if spec.HasField("common") else spec.replicas
