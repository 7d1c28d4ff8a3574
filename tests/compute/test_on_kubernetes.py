"""The compute task types on Kubernetes (plugins: {<type>: kubernetes}), on the project's test cluster.

Spark runs for real: the attempt's pod is the driver, whose spark-submit has Spark's Kubernetes scheduler create
executor pods (the test image's entrypoint plays the part of Spark's images). The Ray, Dask, PyTorch and MPI
operators cannot run here (their images cannot be pulled): their resource definitions are installed from
operator_crds.py, the objects flytelite creates are checked against them (and their pod templates as pods, by
the apiserver), and the test writes the status each operator documents to show how flytelite follows it."""

from __future__ import annotations

import glob
import os
import shutil
from datetime import datetime, timezone
from pathlib import Path

import pytest
import yaml
from flytekit.models.core.execution import TaskExecutionPhase as T
from flytekit.models.core.execution import WorkflowExecutionPhase

from flytelite.testing import make_server
from flytelite.testing_k8s import SPARK_IMAGE, flytelite_config
from tests.compute.conftest import NO_ENGINES, PYTHON, finished, run, succeeded
from tests.compute.operator_crds import RESOURCES, definitions
from tests.e2e.flyte_cli import remote_for, wait_for

pytestmark = NO_ENGINES

NAMESPACE = "flytesnacks-development"
KINDS = ("spark", "ray", "dask", "pytorch", "mpi")
JAVA = shutil.which("java")


def _now() -> str:
    return datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def _ignore_conflict(call, *args) -> None:
    from kubernetes.client.exceptions import ApiException

    try:
        call(*args)
    except ApiException as e:
        if e.status != 409:
            raise


@pytest.fixture(scope="module")
def kube(k8s_cluster):
    from kubernetes import client

    api = k8s_cluster.api_client()
    yield client.CoreV1Api(api), client.CustomObjectsApi(api), client.ApiextensionsV1Api(api), \
        client.RbacAuthorizationV1Api(api)
    api.close()


def install(kube, kind: str) -> None:
    """The resource definition of `kind`, once the apiserver serves it."""
    core, objects, extensions, _ = kube
    (crd,) = [d for d in definitions() if d["spec"]["names"]["kind"] == kind]
    _ignore_conflict(extensions.create_custom_resource_definition, crd)
    group, version, plural = crd["spec"]["group"], crd["spec"]["versions"][0]["name"], crd["spec"]["names"]["plural"]
    wait_for(lambda: _lists(objects, group, version, plural), f"the {kind} resource to be served")


def _lists(objects, group, version, plural) -> bool:
    from kubernetes.client.exceptions import ApiException

    try:
        objects.list_namespaced_custom_object(group, version, NAMESPACE, plural)
        return True
    except ApiException:
        return False


@pytest.fixture(scope="module")
def server(k8s_cluster, kube, tmp_path_factory):
    """A server whose compute task types go to the test cluster; the Spark driver pods run in the node's
    network (the apiserver listens on its loopback) under the `spark` service account, which may manage pods."""
    core, _, _, rbac = kube
    for kind in ("RayJob", "DaskJob", "PyTorchJob"):
        install(kube, kind)
    _ignore_conflict(core.create_namespace, {"metadata": {"name": NAMESPACE}})
    _ignore_conflict(core.create_namespaced_service_account, NAMESPACE, {"metadata": {"name": "spark"}})
    _ignore_conflict(rbac.create_namespaced_role, NAMESPACE, {"metadata": {"name": "spark"}, "rules": [
        {"apiGroups": [""], "resources": ["pods", "services", "configmaps", "persistentvolumeclaims"],
         "verbs": ["*"]}]})
    _ignore_conflict(rbac.create_namespaced_role_binding, NAMESPACE, {
        "metadata": {"name": "spark"},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "spark"},
        "subjects": [{"kind": "ServiceAccount", "name": "spark", "namespace": NAMESPACE}]})
    venv = Path(PYTHON).parents[1]
    java_home = Path(os.path.realpath(JAVA)).parents[1] if JAVA else None
    java_paths = [Path(p) for p in glob.glob("/etc/java-*")] if JAVA else []  # Debian keeps Java's settings there
    cfg = yaml.safe_load(flytelite_config(
        k8s_cluster.kubeconfig, venv, *java_paths, images={"default": SPARK_IMAGE}, host_network=True,
        env={"PATH": f"{venv}/bin:/usr/bin:/bin", **({"JAVA_HOME": str(java_home)} if java_home else {})}))
    cfg["plugins"].update({kind: "kubernetes" for kind in KINDS})
    apiserver = yaml.safe_load(k8s_cluster.kubeconfig.read_text())["clusters"][0]["cluster"]["server"]
    cfg["spark"] = {"kubernetes_api": apiserver}
    srv = make_server(tmp_path_factory.mktemp("k8s-compute"), yaml.safe_dump(cfg))
    srv.start()
    yield srv
    srv.stop()


def _pods(kube, execution: str) -> list:
    return kube[0].list_namespaced_pod(NAMESPACE, label_selector=f"execution-id={execution}").items


def _attempts(server, execution: str) -> list:
    remote = remote_for(server)
    ex = remote.sync_execution(remote.fetch_execution(name=execution), sync_nodes=True)
    nodes = [n for n in ex.node_executions.values() if n.id.node_id == "n0"]
    return list(nodes[0].task_executions) if nodes else []


def _phase(server, execution: str, attempt: int = 0):
    attempts = _attempts(server, execution)
    return attempts[attempt].closure.phase if len(attempts) > attempt else None


@pytest.mark.skipif(not JAVA, reason="Spark's driver and executors need a Java runtime on this machine")
def test_spark_runs_its_driver_as_the_attempts_pod_and_executors_as_pods(server, kube, tmp_path):
    name = run(server, tmp_path, "k8s_wf.py", "spark_wf")
    ex = finished(server, name)
    succeeded(ex)
    driver = f"{name}-n0-0"
    _, probe, *hosts = ex.outputs["o0"]
    assert probe == "seen"  # the task's sparkConf reached its session
    # Its partitions ran in the executors' pods (a pod's host name is its name).
    assert hosts and set(hosts) <= {f"{driver}-exec-1", f"{driver}-exec-2"}, hosts
    (attempt,) = _attempts(server, name)
    assert [log.name for log in attempt.closure.logs] == [
        "Spark Driver Logs", "Spark Executor 1 Logs", "Spark Executor 2 Logs"]
    wait_for(lambda: not _pods(kube, name), "the driver's and executors' pods to be deleted")


def _object(kube, group: str, version: str, plural: str, execution: str, attempt: int = 0) -> dict | None:
    items = kube[1].list_namespaced_custom_object(group, version, NAMESPACE, plural,
                                                  label_selector=f"execution-id={execution}")["items"]
    found = [o for o in items if o["metadata"]["labels"].get("flytelite.io/attempt") == str(attempt)]
    return found[0] if found else None


def _templates(obj) -> list[dict]:
    """Every pod template inside a job object (dicts holding a PodSpec under `spec` with containers)."""
    found = []

    def walk(value):
        if isinstance(value, dict):
            if isinstance(value.get("spec"), dict) and "containers" in value["spec"]:
                found.append(value)
            for child in value.values():
                walk(child)
        elif isinstance(value, list):
            for child in value:
                walk(child)

    walk(obj["spec"])
    return found


def _containers(template: dict) -> dict:
    return {c["name"]: c for c in template["spec"]["containers"]}


def check_ray(spec: dict, execution: str) -> None:
    cluster = spec["rayClusterSpec"]
    assert cluster["headGroupSpec"]["rayStartParams"] == {
        "num-cpus": "1", "include-dashboard": "true", "node-ip-address": "$MY_POD_IP", "dashboard-host": "0.0.0.0",
        "disable-usage-stats": "true"}
    head = _containers(cluster["headGroupSpec"]["template"])["ray-head"]
    assert head["args"] == [] and {p["containerPort"] for p in head["ports"]} == {6379, 10001, 8265}
    (group,) = cluster["workerGroupSpecs"]
    assert (group["groupName"], group["replicas"], group["minReplicas"], group["maxReplicas"]) == ("g", 2, 1, 3)
    worker = _containers(group["template"])["ray-worker"]
    assert worker["lifecycle"]["preStop"]["exec"]["command"][-1] == "ray stop"
    assert spec["entrypoint"].startswith("pyflyte-") and execution in spec["entrypoint"]
    assert yaml.safe_load(spec["runtimeEnvYAML"]) == {"env_vars": {"X": "1"}}
    assert (spec["shutdownAfterJobFinishes"], spec["ttlSecondsAfterFinished"]) == (True, 60)
    assert spec["submitterPodTemplate"]["metadata"]["labels"]["execution-id"] == execution


def check_dask(spec: dict, execution: str) -> None:
    cluster = spec["cluster"]["spec"]
    assert cluster["worker"]["replicas"] == 3
    worker = _containers(cluster["worker"])["dask-worker"]
    assert worker["args"] == ["dask-worker", "--name", "$(DASK_WORKER_NAME)", "--nthreads", "2", "--memory-limit",
                              "2Gi"]
    assert _containers(cluster["scheduler"])["scheduler"]["args"] == ["dask-scheduler"]
    assert cluster["scheduler"]["service"]["type"] == "NodePort"
    runner = _containers(spec["job"])["job-runner"]
    assert "pyflyte-execute" in runner["args"] and spec["job"]["spec"]["restartPolicy"] == "Never"


def check_pytorch(spec: dict, execution: str) -> None:
    replicas = spec["pytorchReplicaSpecs"]
    assert (replicas["Master"]["replicas"], replicas["Worker"]["replicas"]) == (1, 2)
    assert "pyflyte-execute" in _containers(replicas["Worker"]["template"])["pytorch"]["args"]
    assert spec["runPolicy"] == {"cleanPodPolicy": "None", "backoffLimit": 2}


def check_mpi(spec: dict, execution: str) -> None:
    replicas = spec["mpiReplicaSpecs"]
    assert (replicas["Launcher"]["replicas"], replicas["Worker"]["replicas"], spec["slotsPerWorker"]) == (1, 2, 2)
    assert "mpi" in _containers(replicas["Launcher"]["template"])


def _condition(kind: str, *earlier: str) -> dict:
    """A Kubeflow job's status with `kind` its newest true condition."""
    conditions = [{"type": k, "status": "False", "lastTransitionTime": "2026-01-01T00:00:00Z"} for k in earlier]
    return {"conditions": [*conditions, {"type": kind, "status": "True", "lastTransitionTime": _now()}],
            "startTime": _now()}


# workflow, kind, check, [(status the operator writes, the attempt's phase then)]; the last status ends the job.
JOBS = {
    "ray": ("ray_wf", "RayJob", check_ray, [
        ({"jobDeploymentStatus": "Initializing"}, T.INITIALIZING),
        ({"jobDeploymentStatus": "Running", "jobStatus": "RUNNING"}, T.RUNNING),
        ({"jobDeploymentStatus": "Complete", "jobStatus": "SUCCEEDED"}, T.SUCCEEDED)]),
    "dask": ("dask_wf", "DaskJob", check_dask, [
        ({"jobStatus": "ClusterCreated"}, T.INITIALIZING),
        ({"jobStatus": "Running", "jobRunnerPodName": "runner-pod"}, T.RUNNING),
        ({"jobStatus": "Successful"}, T.SUCCEEDED)]),
    "pytorch": ("pytorch_wf", "PyTorchJob", check_pytorch, [
        (_condition("Running", "Created"), T.RUNNING),
        (_condition("Succeeded", "Created", "Running"), T.SUCCEEDED)]),
    "mpi": ("mpi_wf", "MPIJob", check_mpi, [
        (_condition("Running", "Created"), T.RUNNING),
        (_condition("Succeeded", "Created", "Running"), T.SUCCEEDED)]),
}


def _resource(kind: str) -> tuple[str, str, str]:
    (group, version, plural), = [(g, v, p) for g, v, k, p, *_ in RESOURCES if k == kind]
    return group, version, plural


def test_without_the_operators_resource_the_attempt_fails_naming_the_operator(server, tmp_path):
    name = run(server, tmp_path, "k8s_wf.py", "mpi_wf")
    ex = finished(server, name)
    assert ex.closure.phase == WorkflowExecutionPhase.FAILED
    assert "serves no MPIJob resource (kubeflow.org/v1); install Kubeflow's training operator" in \
        ex.error.message, ex.error.message


@pytest.mark.parametrize("engine", list(JOBS))
def test_the_job_object_follows_the_operators_schema_and_its_status_drives_the_attempt(engine, server, kube,
                                                                                       tmp_path):
    workflow, kind, check, steps = JOBS[engine]
    install(kube, kind)
    group, version, plural = _resource(kind)
    name = run(server, tmp_path, "k8s_wf.py", workflow)
    obj = wait_for(lambda: _object(kube, group, version, plural, name), f"the {kind} of {name}")
    assert obj["metadata"]["name"] == f"{name}-n0-0"
    check(obj["spec"], name)
    # Every pod template inside is a pod the apiserver accepts.
    for template in _templates(obj):
        pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"generateName": "check-"}, "spec": template["spec"]}
        kube[0].create_namespaced_pod(NAMESPACE, pod, dry_run="All")
    for status, phase in steps:
        kube[1].patch_namespaced_custom_object_status(group, version, NAMESPACE, plural, obj["metadata"]["name"],
                                                      {"status": status})
        wait_for(lambda phase=phase: _phase(server, name) == phase, f"the attempt to be {phase} after status {status}")
    succeeded(finished(server, name))
    wait_for(lambda: _object(kube, group, version, plural, name) is None, f"the {kind} to be deleted")


def test_a_failed_operator_job_is_a_system_error_retried_and_abort_deletes_the_job(server, kube, tmp_path):
    group, version, plural = _resource("DaskJob")
    name = run(server, tmp_path, "k8s_wf.py", "dask_wf")
    first = wait_for(lambda: _object(kube, group, version, plural, name), "the first attempt's DaskJob")
    kube[1].patch_namespaced_custom_object_status(group, version, NAMESPACE, plural, first["metadata"]["name"],
                                                  {"status": {"jobStatus": "Failed"}})
    second = wait_for(lambda: _object(kube, group, version, plural, name, attempt=1), "a second attempt's DaskJob")
    assert second["metadata"]["name"] == f"{name}-n0-1"
    failed = _attempts(server, name)[0]
    assert failed.closure.phase == T.FAILED and failed.closure.error.message == "Dask Job failed"
    remote = remote_for(server)
    remote.terminate(remote.fetch_execution(name=name), "stopped by the test")
    wait_for(lambda: _object(kube, group, version, plural, name, attempt=1) is None, "the aborted attempt's DaskJob "
             "to be deleted")
    assert finished(server, name).closure.phase == WorkflowExecutionPhase.ABORTED
