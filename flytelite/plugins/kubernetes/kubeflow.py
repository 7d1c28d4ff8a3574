"""flytekitplugins-kfpytorch's `pytorch` and flytekitplugins-kfmpi's `mpi` tasks on Kubernetes: the training
operator's PyTorchJob and MPIJob (kubeflow.org/v1), built as flyteplugins' k8s/kfoperators plugins build them.
Each replica type is the attempt's pod with the primary container renamed (pytorch, mpi), with the image,
resources and restart policy of its replica spec (task type version 1, `common` first) or the task's (version 0);
the run policy and an elastic policy (which replaces the master) come from the task's config. The phase is the
newest true condition's; a job the operator has not started within `kubernetes.kubeflow_timeout_seconds` of its
creation fails, as flyteplugins' kf-operator timeout has it.
"""

from __future__ import annotations

from datetime import datetime, timezone

from flyteidl.core import execution_pb2
from flyteidl.plugins import mpi_pb2, pytorch_pb2
from flyteidl.plugins.kubeflow import common_pb2
from flyteidl.plugins.kubeflow import mpi_pb2 as kf_mpi
from flyteidl.plugins.kubeflow import pytorch_pb2 as kf_pytorch

from flytelite.idl import error_codes as E
from flytelite.idl.error_kinds import SYSTEM
from flytelite.plugins.kubernetes import phases, pods
from flytelite.plugins.kubernetes.informer import PodKey
from flytelite.plugins.kubernetes.resource import (
    CustomResourcePlugin,
    condition_phase,
    replica_spec,
    template,
)
from flytelite.plugins.machinery.core import TaskExecutionContext
from flytelite.plugins.machinery.taskspec import BadShape, custom

RESTART_POLICIES = {common_pb2.RESTART_POLICY_NEVER: "Never", common_pb2.RESTART_POLICY_ON_FAILURE: "OnFailure",
                    common_pb2.RESTART_POLICY_ALWAYS: "Always"}
CLEAN_POD_POLICIES = {common_pb2.CLEANPOD_POLICY_NONE: "None", common_pb2.CLEANPOD_POLICY_RUNNING: "Running",
                      common_pb2.CLEANPOD_POLICY_ALL: "All"}
# The variable flytekit reads a worker's pod name from (flyteplugins' FlyteInternalWorkerNameEnvVarKey).
WORKER_NAME_ENV = "_F_WN"


class KubeflowPlugin(CustomResourcePlugin):
    group, version = "kubeflow.org", "v1"
    operator = "Kubeflow's training operator"
    container = ""
    replicas_field = ""

    def replica(self, pod: dict, spec=None, master: bool = False) -> dict:
        """A ReplicaSpec: the attempt's pod as this job's container, with a replica spec's overrides."""
        primary = pod["metadata"]["annotations"]["primary_container_name"]
        body, main = replica_spec(pod, primary, self.container)
        replicas, policy = 0, "Never"
        if spec is not None:
            fields = spec.common if spec.HasField("common") else spec
            replicas, policy = fields.replicas, RESTART_POLICIES.get(fields.restart_policy, "Never")
            if fields.image:
                main["image"] = self.cfg.images.get(fields.image) or self.cfg.images.get("default") or fields.image
            if len(fields.resources.requests) or len(fields.resources.limits):
                main["resources"] = pods.requirements(fields.resources, None, self.cfg)
            command = list(getattr(spec, "command", []))
            if command:
                main["args"] = command
        return {"replicas": 1 if master else replicas, "template": template(pod, body), "restartPolicy": policy}

    def phase(self, obj: dict) -> phases.PodState:
        status = obj.get("status") or {}
        suspended = ((obj.get("spec") or {}).get("runPolicy") or {}).get("suspend")
        created = obj.get("metadata", {}).get("creationTimestamp", "")
        timeout = self.cfg.kubeflow_timeout_seconds
        if not suspended and not status.get("startTime") and created and timeout:
            age = (datetime.now(timezone.utc) - datetime.fromisoformat(created.replace("Z", "+00:00"))).total_seconds()
            if age > timeout:
                return phases.PodState("failed", f"kubeflow operator hasn't updated the {self.id} custom resource "
                                       f"since creation time {created}", E.DOWNSTREAM_SYSTEM_ERROR, SYSTEM, True)
        return condition_phase(status.get("conditions") or [], created)

    def _replica_logs(self, key: PodKey, obj: dict | None, master: str) -> list[execution_pb2.TaskLog]:
        """Links to the master's pod (if the job has one) and each worker's, named as the operator names them."""
        specs = ((obj or {}).get("spec") or {}).get(self.replicas_field) or {}
        name = key[1]
        links = [(f"{name}-master-0", "master")] if master in specs else []
        links += [(f"{name}-worker-{i}", f"worker {i}") for i in range(specs.get("Worker", {}).get("replicas", 0))]
        return self._pod_logs(key[0], links)


class PyTorchJobPlugin(KubeflowPlugin):
    id = "pytorch"
    task_types = ("pytorch",)
    plural, kind = "pytorchjobs", "PyTorchJob"
    container = "pytorch"
    replicas_field = "pytorchReplicaSpecs"

    def build(self, tctx: TaskExecutionContext, pod: dict) -> dict:
        run_policy: dict = {}
        if tctx.task.task_type_version == 0:
            old = custom(tctx.task, pytorch_pb2.DistributedPyTorchTrainingTask)
            master, worker = self.replica(pod, master=True), self.replica(pod)
            worker["replicas"] = old.workers
            elastic = old.elastic_config if old.HasField("elastic_config") else None
        else:
            job = custom(tctx.task, kf_pytorch.DistributedPyTorchTrainingTask, versions=(0, 1))
            master = self.replica(pod, job.master_replicas, master=True)
            worker = self.replica(pod, job.worker_replicas)
            for c in worker["template"]["spec"]["containers"][:1]:
                c["env"] = [*c.get("env", []),
                            {"name": WORKER_NAME_ENV, "valueFrom": {"fieldRef": {"fieldPath": "metadata.name"}}}]
            run_policy = _run_policy(job.run_policy) if job.HasField("run_policy") else {}
            elastic = job.elastic_config if job.HasField("elastic_config") else None
        specs = {"Master": master}
        if worker["replicas"] > 0:
            specs["Worker"] = worker
        spec: dict = {"pytorchReplicaSpecs": specs, "runPolicy": run_policy}
        if elastic is not None:
            spec["elasticPolicy"] = {"minReplicas": elastic.min_replicas, "maxReplicas": elastic.max_replicas,
                                     "rdzvBackend": elastic.rdzv_backend, "nProcPerNode": elastic.nproc_per_node,
                                     "maxRestarts": elastic.max_restarts}
            del specs["Master"]
        return spec

    def _logs(self, key: PodKey, obj: dict | None = None) -> list[execution_pb2.TaskLog]:
        return self._replica_logs(key, obj, "Master")


class MPIJobPlugin(KubeflowPlugin):
    id = "mpi"
    task_types = ("mpi",)
    plural, kind = "mpijobs", "MPIJob"
    container = "mpi"
    replicas_field = "mpiReplicaSpecs"

    def build(self, tctx: TaskExecutionContext, pod: dict) -> dict:
        run_policy: dict = {}
        if tctx.task.task_type_version == 0:
            old = custom(tctx.task, mpi_pb2.DistributedMPITrainingTask)
            launcher, worker = self.replica(pod), self.replica(pod)
            launcher["replicas"], worker["replicas"] = max(old.num_launcher_replicas, 1), old.num_workers
            slots = old.slots
            command = tctx.task.config.get("worker_spec_command", "")
            for c in worker["template"]["spec"]["containers"]:
                if c["name"] == self.container:
                    c["args"], c["command"] = command.split(" ") if command else [], []
        else:
            job = custom(tctx.task, kf_mpi.DistributedMPITrainingTask, versions=(0, 1))
            launcher = self.replica(pod, job.launcher_replicas, master=True)
            worker = self.replica(pod, job.worker_replicas)
            run_policy = _run_policy(job.run_policy) if job.HasField("run_policy") else {}
            slots = job.slots
        if worker["replicas"] <= 0:
            raise BadShape("number of workers must be greater than 0")
        return {"slotsPerWorker": slots, "runPolicy": run_policy,
                "mpiReplicaSpecs": {"Launcher": launcher, "Worker": worker}}

    def _logs(self, key: PodKey, obj: dict | None = None) -> list[execution_pb2.TaskLog]:
        return self._replica_logs(key, obj, "")


def _run_policy(policy: common_pb2.RunPolicy) -> dict:
    """flyteplugins' ParseRunPolicy: zero values are left out, the clean-pod policy always set."""
    out: dict = {"cleanPodPolicy": CLEAN_POD_POLICIES[policy.clean_pod_policy]}
    if policy.backoff_limit:
        out["backoffLimit"] = policy.backoff_limit
    if policy.active_deadline_seconds:
        out["activeDeadlineSeconds"] = policy.active_deadline_seconds
    if policy.ttl_seconds_after_finished:
        out["ttlSecondsAfterFinished"] = policy.ttl_seconds_after_finished
    return out
