"""The resource definitions of the operators whose jobs flytelite creates on Kubernetes (KubeRay's RayJob, the
Dask operator's DaskJob, Kubeflow's PyTorchJob and MPIJob), for the test cluster, where the operators' images
cannot be pulled. Written for these tests from the operators' API types (ray.io/v1, kubernetes.dask.org/v1,
kubeflow.org/v1): each field flyteplugins sets, with its type and the operators' enums, and the status fields
they write. The apiserver prunes what a schema does not name, so a field flytelite misspells is gone from the
stored object; the pod templates inside are kept whole here and checked as pods by the tests (a dry run)."""

from __future__ import annotations

STRING, INT, BOOL = {"type": "string"}, {"type": "integer"}, {"type": "boolean"}
STRINGS = {"type": "object", "additionalProperties": STRING}
POD = {"type": "object", "x-kubernetes-preserve-unknown-fields": True}  # a PodSpec / PodTemplateSpec


def obj(required: tuple[str, ...] = (), **properties) -> dict:
    schema = {"type": "object", "properties": properties}
    if required:
        schema["required"] = list(required)
    return schema


def enum(*values: str) -> dict:
    return {"type": "string", "enum": list(values)}


CONDITIONS = {"type": "array", "items": obj(("type", "status"), type=STRING, status=STRING, reason=STRING,
                                            message=STRING, lastTransitionTime=STRING, lastUpdateTime=STRING)}
KUBEFLOW_STATUS = obj(conditions=CONDITIONS, startTime=STRING, completionTime=STRING,
                      replicaStatuses={"type": "object", "x-kubernetes-preserve-unknown-fields": True})
REPLICA_SPECS = {"type": "object", "additionalProperties": obj(
    replicas=INT, restartPolicy=enum("Always", "OnFailure", "Never", "ExitCode"), template=POD)}
RUN_POLICY = obj(cleanPodPolicy=enum("All", "Running", "None"), ttlSecondsAfterFinished=INT,
                 activeDeadlineSeconds=INT, backoffLimit=INT, suspend=BOOL)

RAY_JOB = obj(
    rayClusterSpec=obj(
        headGroupSpec=obj(("template",), serviceType=STRING, enableIngress=BOOL, rayStartParams=STRINGS, template=POD),
        workerGroupSpecs={"type": "array", "items": obj(
            ("groupName", "template"), groupName=STRING, replicas=INT, minReplicas=INT, maxReplicas=INT,
            rayStartParams=STRINGS, template=POD)},
        enableInTreeAutoscaling=BOOL,
        autoscalerOptions=obj(idleTimeoutSeconds=INT, upscalingMode=enum("Default", "Aggressive", "Conservative"),
                              image=STRING)),
    entrypoint=STRING, runtimeEnvYAML=STRING, shutdownAfterJobFinishes=BOOL, ttlSecondsAfterFinished=INT,
    submitterPodTemplate=POD)
RAY_STATUS = obj(jobDeploymentStatus=STRING, jobStatus=STRING, jobId=STRING, rayClusterName=STRING,
                 dashboardURL=STRING, reason=STRING, message=STRING, startTime=STRING)

DASK_JOB = obj(
    ("job", "cluster"),
    job=obj(("spec",), spec=POD),
    cluster=obj(metadata={"type": "object", "x-kubernetes-preserve-unknown-fields": True}, spec=obj(
        ("worker", "scheduler"),
        worker=obj(("spec",), replicas=INT, spec=POD),
        scheduler=obj(("spec", "service"), spec=POD, service={"type": "object",
                                                             "x-kubernetes-preserve-unknown-fields": True}))))
DASK_STATUS = obj(jobStatus=STRING, jobRunnerPodName=STRING, clusterName=STRING, startTime=STRING, endTime=STRING)

PYTORCH_JOB = obj(("pytorchReplicaSpecs",), pytorchReplicaSpecs=REPLICA_SPECS, runPolicy=RUN_POLICY,
                  elasticPolicy=obj(minReplicas=INT, maxReplicas=INT, rdzvBackend=STRING, nProcPerNode=INT,
                                    maxRestarts=INT))
MPI_JOB = obj(("mpiReplicaSpecs",), mpiReplicaSpecs=REPLICA_SPECS, runPolicy=RUN_POLICY, slotsPerWorker=INT)

# (group, version, kind, plural, spec schema, status schema)
RESOURCES = [
    ("ray.io", "v1", "RayJob", "rayjobs", RAY_JOB, RAY_STATUS),
    ("kubernetes.dask.org", "v1", "DaskJob", "daskjobs", DASK_JOB, DASK_STATUS),
    ("kubeflow.org", "v1", "PyTorchJob", "pytorchjobs", PYTORCH_JOB, KUBEFLOW_STATUS),
    ("kubeflow.org", "v1", "MPIJob", "mpijobs", MPI_JOB, KUBEFLOW_STATUS),
]


def definitions() -> list[dict]:
    """The CustomResourceDefinitions (apiextensions.k8s.io/v1), namespaced, with a status subresource."""
    return [{
        "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
        "metadata": {"name": f"{plural}.{group}"},
        "spec": {"group": group, "scope": "Namespaced",
                 "names": {"kind": kind, "plural": plural, "singular": kind.lower(), "listKind": f"{kind}List"},
                 "versions": [{"name": version, "served": True, "storage": True,
                               "subresources": {"status": {}},
                               "schema": {"openAPIV3Schema": obj(spec=spec, status=status)}}]},
    } for group, version, kind, plural, spec, status in RESOURCES]
