"""flytekitplugins-dask's `dask` tasks on Kubernetes: a DaskJob of the Dask operator (kubernetes.dask.org/v1),
built as flyteplugins' k8s/dask plugin builds it from the attempt's pod: the job runner (the task's own command,
container `job-runner`), a scheduler (`dask-scheduler`, its service on NodePort) and `number_of_workers` workers
(`dask-worker` with threads and memory from their limits), each with the task's image and resources unless the
task's Dask config names its own. The scheduler and the runner are never interruptible.
"""

from __future__ import annotations

import copy
import math

from flyteidl.core import execution_pb2
from flyteidl.plugins import dask_pb2

from flytelite.idl import error_codes as E
from flytelite.idl.error_kinds import SYSTEM
from flytelite.plugins.kubernetes import phases, pods
from flytelite.plugins.kubernetes.informer import PodKey
from flytelite.plugins.kubernetes.resource import CustomResourcePlugin, replica_spec
from flytelite.plugins.machinery.core import TaskExecutionContext
from flytelite.plugins.machinery.taskspec import custom, quantity

# DaskJob's jobStatus, as flyteplugins maps it (any other status is running).
_STATUS = {"": ("initializing", "unknown"), "JobCreated": ("initializing", "job created"),
           "ClusterCreated": ("initializing", "cluster created"), "Successful": ("succeeded", "")}
PORTS = [{"name": "tcp-comm", "containerPort": 8786, "protocol": "TCP"},
         {"name": "dashboard", "containerPort": 8787, "protocol": "TCP"}]


class DaskJobPlugin(CustomResourcePlugin):
    id = "dask"
    task_types = ("dask",)
    group, version, plural, kind = "kubernetes.dask.org", "v1", "daskjobs", "DaskJob"
    operator = "the Dask operator (dask-kubernetes)"

    def build(self, tctx: TaskExecutionContext, pod: dict) -> dict:
        job = custom(tctx.task, dask_pb2.DaskJob)
        primary = pod["metadata"]["annotations"]["primary_container_name"]
        name = pod["metadata"]["name"]
        steady = self._not_interruptible(pod)

        worker, main = replica_spec(pod, primary, "dask-worker")
        self._shape(main, job.workers.image, job.workers.resources)
        limits = main["resources"].get("limits", {})
        main["args"] = ["dask-worker", "--name", "$(DASK_WORKER_NAME)"]
        if limits.get("cpu"):
            main["args"] += ["--nthreads", str(math.ceil(quantity(limits["cpu"])))]
        if limits.get("memory"):
            main["args"] += ["--memory-limit", limits["memory"]]
        main.pop("command", None)
        worker["restartPolicy"] = "Always"

        scheduler, main = replica_spec(steady, primary, "scheduler")
        self._shape(main, job.scheduler.image, job.scheduler.resources)
        main.pop("command", None)
        main["args"], main["ports"] = ["dask-scheduler"], PORTS
        scheduler["restartPolicy"] = "Always"

        runner, _ = replica_spec(steady, primary, "job-runner")
        runner["restartPolicy"] = "Never"
        meta = pod["metadata"]
        return {
            "job": {"spec": runner},
            "cluster": {
                "metadata": {"labels": dict(meta.get("labels", {})), "annotations": dict(meta.get("annotations", {}))},
                "spec": {
                    "worker": {"replicas": job.workers.number_of_workers, "spec": worker},
                    "scheduler": {"spec": scheduler, "service": {
                        "type": "NodePort",
                        "selector": {"dask.org/cluster-name": name, "dask.org/component": "scheduler"},
                        "ports": [{"name": p["name"], "protocol": "TCP", "port": p["containerPort"],
                                   "targetPort": p["name"]} for p in PORTS]}},
                },
            },
        }

    def _shape(self, main: dict, image: str, resources) -> None:
        """A group's own image and resources, where the task's Dask config names them."""
        if image:
            main["image"] = self.cfg.images.get(image) or self.cfg.images.get("default") or image
        if len(resources.requests) or len(resources.limits):
            main["resources"] = pods.requirements(resources, None, self.cfg)

    def _not_interruptible(self, pod: dict) -> dict:
        """The attempt's pod without what an interruptible task adds (its tolerations and node selector)."""
        steady = copy.deepcopy(pod)
        spec = steady["spec"]
        spec["tolerations"] = [t for t in spec.get("tolerations", []) if t not in self.cfg.interruptible_tolerations]
        spec["nodeSelector"] = {k: v for k, v in spec.get("nodeSelector", {}).items()
                                if self.cfg.interruptible_node_selector.get(k) != v}
        for key in ("tolerations", "nodeSelector"):
            if not spec[key]:
                del spec[key]
        return steady

    def phase(self, obj: dict) -> phases.PodState:
        status = (obj.get("status") or {}).get("jobStatus", "")
        if status == "Failed":
            return phases.PodState("failed", "Dask Job failed", E.DOWNSTREAM_SYSTEM_ERROR, SYSTEM, True)
        phase, reason = _STATUS.get(status, ("running", ""))
        return phases.PodState(phase, reason)

    def _logs(self, key: PodKey, obj: dict | None = None) -> list[execution_pb2.TaskLog]:
        runner = ((obj or {}).get("status") or {}).get("jobRunnerPodName")
        return self._pod_logs(key[0], [(runner, "Dask Runner Logs")]) if runner else []
