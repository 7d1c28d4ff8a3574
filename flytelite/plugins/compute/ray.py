"""flytekitplugins-ray's `ray` tasks (flyteplugins' k8s/ray plugin, which KubeRay runs as a RayJob): a Ray head
and each worker group's replicas as `ray start` processes with the groups' `ray_start_params`, and the task
submitted to the head as a Ray job, as the RayJob's submitter does (entrypoint: the task's command joined by
spaces; runtime environment: the task's `runtime_env_yaml`, else its older base64 `runtime_env`). With `ray.address`
in the configuration, the job goes to that cluster instead.

The cluster stops when the job ends, whatever `shutdown_after_job_finishes` and `ttl_seconds_after_finished`
say: a cluster kept for an hour after its job (Flyte's default TTL) would hold this machine's cores and memory.
"""

from __future__ import annotations

import base64
import binascii
import json

import yaml
from flyteidl.plugins import ray_pb2

from flytelite.plugins.compute.plugin import EngineProcess
from flytelite.plugins.machinery.core import TaskExecutionContext
from flytelite.plugins.machinery.environment import flyte_task_env
from flytelite.plugins.machinery.taskspec import BadShape, custom


class RayProcess(EngineProcess):
    id = "ray"
    task_types = ("ray",)
    program = "ray"
    package = "flytekitplugins-ray (with ray[default])"
    role = "job submitter"

    def shape(self, tctx: TaskExecutionContext) -> dict:
        job = custom(tctx.task, ray_pb2.RayJob)
        spec = {"engine": "ray", "submission_id": tctx.unique_key, "runtime_env": runtime_env(job),
                "job_env": flyte_task_env(tctx, self.ctx)}
        address = self.ctx.config.ray.address
        if address:
            return {**spec, "address": address}
        cluster = job.ray_cluster
        groups = [{"name": g.group_name or f"group-{i}", "replicas": max(g.replicas, g.min_replicas),
                   "params": dict(g.ray_start_params)} for i, g in enumerate(cluster.worker_group_spec)]
        return {**spec, "head": dict(cluster.head_group_spec.ray_start_params), "groups": groups}


def runtime_env(job: ray_pb2.RayJob) -> dict:
    try:
        if job.runtime_env_yaml:
            env = yaml.safe_load(job.runtime_env_yaml)
        elif job.runtime_env:
            env = json.loads(base64.b64decode(job.runtime_env))
        else:
            return {}
    except (yaml.YAMLError, binascii.Error, ValueError) as e:
        raise BadShape(f"its Ray runtime environment cannot be read: {e}") from None
    if env is not None and not isinstance(env, dict):
        raise BadShape(f"its Ray runtime environment is not a mapping: {env!r}")
    return env or {}
