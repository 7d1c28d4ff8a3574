"""flytekitplugins-ray's `ray` tasks on Kubernetes: a KubeRay RayJob (ray.io/v1), built as flyteplugins' k8s/ray
plugin builds it: the head and each worker group are the attempt's pod with the primary container renamed
(ray-head, ray-worker), no args (the operator starts Ray), Ray's ports and the pod-address variables; their
`ray_start_params` with the plugin's defaults (dashboard on, node address $MY_POD_IP, usage stats off); the job's
entrypoint is the task's args joined by spaces, submitted by KubeRay's submitter pod (the attempt's pod); the
cluster is shut down after the job, `ttl_seconds_after_finished` later (flyteplugins' default: 3600 s).
"""

from __future__ import annotations

import yaml
from flyteidl.core import execution_pb2
from flyteidl.plugins import ray_pb2
from google.protobuf import json_format

from flytelite.idl import error_codes as E
from flytelite.idl.error_kinds import SYSTEM
from flytelite.plugins.compute.ray import runtime_env
from flytelite.plugins.kubernetes import phases
from flytelite.plugins.kubernetes.informer import PodKey
from flytelite.plugins.kubernetes.resource import CustomResourcePlugin, overlay, replica_spec, template
from flytelite.plugins.machinery.core import TaskExecutionContext
from flytelite.plugins.machinery.taskspec import custom

PORTS = [{"name": "redis", "containerPort": 6379}, {"name": "head", "containerPort": 10001},
         {"name": "dashboard", "containerPort": 8265}]
# flyteplugins' ray config defaults.
TTL_SECONDS_AFTER_FINISHED = 3600
_POD_IP = {"name": "MY_POD_IP", "valueFrom": {"fieldRef": {"fieldPath": "status.podIP"}}}


def _resource_env(name: str, resource: str) -> dict:
    return {"name": name, "valueFrom": {"resourceFieldRef": {"containerName": "ray-worker", "resource": resource}}}


# As flyteplugins sets them (its MEMORY_* variables read the CPU fields, and so do these).
WORKER_ENV = [
    {"name": "RAY_DISABLE_DOCKER_CPU_WARNING", "value": "1"}, {"name": "TYPE", "value": "worker"},
    _resource_env("CPU_REQUEST", "requests.cpu"), _resource_env("CPU_LIMITS", "limits.cpu"),
    _resource_env("MEMORY_REQUESTS", "requests.cpu"), _resource_env("MEMORY_LIMITS", "limits.cpu"),
    {"name": "MY_POD_NAME", "valueFrom": {"fieldRef": {"fieldPath": "metadata.name"}}}, _POD_IP,
]
# KubeRay's JobDeploymentStatus, as flyteplugins maps it (the empty status is "New").
_DEPLOYMENT = {"": ("queued", "Scheduling"), "New": ("queued", "Scheduling"),
               "Initializing": ("initializing", "cluster is creating"), "Running": ("running", ""),
               "Complete": ("succeeded", ""), "Suspended": ("queued", "Suspended"),
               "Suspending": ("queued", "Suspending")}


class RayJobPlugin(CustomResourcePlugin):
    id = "ray"
    task_types = ("ray",)
    group, version, plural, kind = "ray.io", "v1", "rayjobs", "RayJob"
    operator = "KubeRay's operator"

    def build(self, tctx: TaskExecutionContext, pod: dict) -> dict:
        job = custom(tctx.task, ray_pb2.RayJob)
        primary = pod["metadata"]["annotations"]["primary_container_name"]
        cluster = job.ray_cluster
        head_params = dict(cluster.head_group_spec.ray_start_params) or {"disable-usage-stats": "true"}
        head_params.setdefault("include-dashboard", "true")
        head_params.setdefault("node-ip-address", "$MY_POD_IP")
        head_params.setdefault("dashboard-host", "0.0.0.0")
        head_params.setdefault("disable-usage-stats", "true")
        head, main = replica_spec(pod, primary, "ray-head")
        main["args"], main["env"] = [], [*main.get("env", []), _POD_IP]
        main["ports"] = [*main.get("ports", []), *PORTS]
        head = _with_pod(head, cluster.head_group_spec)
        spec: dict = {
            "headGroupSpec": {"template": template(pod, head), "serviceType": "NodePort", "enableIngress": False,
                              "rayStartParams": head_params},
            "workerGroupSpecs": [], "enableInTreeAutoscaling": cluster.enable_autoscaling,
        }
        if cluster.HasField("autoscaler_options"):
            spec["autoscalerOptions"] = _autoscaler(cluster.autoscaler_options)
        for group in cluster.worker_group_spec:
            worker, main = replica_spec(pod, primary, "ray-worker")
            main["args"], main["env"] = [], [*main.get("env", []), *WORKER_ENV]
            main["lifecycle"] = {"preStop": {"exec": {"command": ["/bin/sh", "-c", "ray stop"]}}}
            main["ports"] = [*main.get("ports", []), *PORTS]
            params = dict(group.ray_start_params) or {"disable-usage-stats": "true"}
            params.setdefault("node-ip-address", "$MY_POD_IP")
            params.setdefault("disable-usage-stats", "true")
            spec["workerGroupSpecs"].append({
                "groupName": group.group_name, "replicas": group.replicas,
                "minReplicas": min(group.min_replicas, group.replicas),
                "maxReplicas": max(group.max_replicas, group.replicas),
                "rayStartParams": params, "template": template(pod, _with_pod(worker, group)),
            })
        shutdown, ttl = True, TTL_SECONDS_AFTER_FINISHED
        if job.shutdown_after_job_finishes:
            ttl = job.ttl_seconds_after_finished
        submitter = template(pod, pod["spec"])
        args = container_args(pod, primary)
        env_yaml = job.runtime_env_yaml or (yaml.safe_dump(runtime_env(job)) if job.runtime_env else "")
        return {"rayClusterSpec": spec, "entrypoint": " ".join(a if a else "''" for a in args),
                "shutdownAfterJobFinishes": shutdown, "ttlSecondsAfterFinished": ttl,
                "runtimeEnvYAML": env_yaml, "submitterPodTemplate": submitter}

    def phase(self, obj: dict) -> phases.PodState:
        status = obj.get("status") or {}
        deployment = status.get("jobDeploymentStatus", "")
        if deployment == "Failed":
            return phases.PodState("failed", f"Failed to run Ray job {obj['metadata']['name']} with error: "
                                   f"[{status.get('reason', '')}] {status.get('message', '')}",
                                   E.TASK_FAILED_WITH_ERROR, SYSTEM, True)
        if deployment not in _DEPLOYMENT:
            return phases.PodState("failed", f"unknown job deployment status: {deployment}", E.UNKNOWN_PHASE,
                                   SYSTEM, True)
        phase, reason = _DEPLOYMENT[deployment]
        return phases.PodState(phase, reason)

    def _logs(self, key: PodKey, obj: dict | None = None) -> list[execution_pb2.TaskLog]:
        """The Ray dashboard while the job runs (KubeRay names the cluster's pods; flyteplugins links them only
        through configured templates)."""
        status = (obj or {}).get("status") or {}
        if status.get("dashboardURL") and status.get("jobStatus") == "RUNNING":
            return [execution_pb2.TaskLog(uri=f"http://{status['dashboardURL']}", name="Ray Dashboard")]
        return []


def container_args(pod: dict, primary: str) -> list[str]:
    main = next(c for c in pod["spec"]["containers"] if c.get("name") == primary)
    return list(main.get("command", [])) + list(main.get("args", []))


def _with_pod(spec: dict, group) -> dict:
    """A group's own pod spec (flytekit's per-group pod_template) over the attempt's."""
    if not group.HasField("k8s_pod") or not group.k8s_pod.HasField("pod_spec"):
        return spec
    return overlay(spec, json_format.MessageToDict(group.k8s_pod.pod_spec))


def _autoscaler(options: ray_pb2.AutoscalerOptions) -> dict:
    out: dict = {}
    if options.idle_timeout_seconds > 0:
        out["idleTimeoutSeconds"] = options.idle_timeout_seconds
    mode = {1: "Default", 2: "Aggressive", 3: "Conservative"}.get(options.upscaling_mode)
    if mode:
        out["upscalingMode"] = mode
    if options.image:
        out["image"] = options.image
    return out
