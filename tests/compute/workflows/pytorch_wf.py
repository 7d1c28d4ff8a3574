"""flytekitplugins-kfpytorch's two shapes, with a collective across the replicas: PyTorch(num_workers=…) (a
master and workers) and Elastic with several nodes, and Elastic on one node (a python-task whose processes
flytekit starts itself)."""

import os

import torch
import torch.distributed as dist
from flytekit import task, workflow
from flytekitplugins.kfpytorch import Elastic, PyTorch


def _all_reduce() -> str:
    dist.init_process_group("gloo")
    value = torch.tensor([dist.get_rank() + 1.0])
    dist.all_reduce(value)
    answer = f"world={dist.get_world_size()} sum={int(value.item())}"
    dist.destroy_process_group()
    return answer


@task(task_config=PyTorch(num_workers=2))
def master_and_workers() -> str:
    # Every replica writes the task's outputs, as under the training operator: the same answer from each.
    return f"{_all_reduce()} ranks={os.environ['WORLD_SIZE']}"


@task(task_config=Elastic(nnodes=2, nproc_per_node=1))
def elastic_nodes() -> str:
    return _all_reduce()


@task(task_config=Elastic(nnodes=1, nproc_per_node=2))
def elastic_one_node() -> str:
    return _all_reduce()


@workflow
def pytorch_wf() -> tuple[str, str, str]:
    return master_and_workers(), elastic_nodes(), elastic_one_node()
