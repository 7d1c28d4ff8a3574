"""The manifests of deploy/kubernetes on the project's test cluster: flytelite as pods of its own image (API and
engine replicas, overlay api-engine) on PostgreSQL and S3 (moto) that run on this machine, the Kubernetes
plugin through the pods' service account. `pyflyte run --remote` from this machine runs workflows whose
tasks are pods; restarting the engine Deployment and deleting an engine pod in their middle loses nothing
and runs no task twice (counted: one pod per task, by uid, seen by a watch from the start).

The test overlay adds only what this cluster needs (no kube-proxy, no cluster DNS): the apiserver's name
and the database's and bucket's addresses resolve to the host's address on the pod network.
"""

from __future__ import annotations

import json
import os
import subprocess
import threading
from collections import defaultdict
from dataclasses import dataclass
from importlib.metadata import version
from pathlib import Path

import pytest
import yaml
from flytekit.models.core.execution import WorkflowExecutionPhase

from flytelite.testing import S3TestServer, free_port, without_flyte_settings
from flytelite.testing_k8s import cache_dir
from flytelite.testing_pg import PostgresCluster, create_database
from tests.e2e.flyte_cli import finished, run_remote, wait_for

CHECKOUT = Path(__file__).resolve().parents[2]
DEPLOY = CHECKOUT / "deploy" / "kubernetes"
VERSION = version("flytelite")
IMAGES = CHECKOUT / "dist" / "images"
SERVER_IMAGE, TASK_IMAGE = f"localhost/flytelite:{VERSION}", f"localhost/flytelite-flytekit:{VERSION}"
NAMESPACE = "flytelite"
TASKS_NAMESPACE = "flytesnacks-development"
APISERVER_PORT = 16443


def kubectl(cluster, *args: str, timeout: float = 300, check: bool = True) -> subprocess.CompletedProcess:
    out = subprocess.run([str(cache_dir() / "bin" / "kubectl"), "--kubeconfig", str(cluster.kubeconfig), *args],
                         capture_output=True, text=True, timeout=timeout, stdin=subprocess.DEVNULL)
    if check and out.returncode != 0:
        raise AssertionError(f"kubectl {' '.join(args)} failed ({out.returncode}):\n{out.stdout}\n{out.stderr}")
    return out


@dataclass
class DeployedFlytelite:
    """What tests/e2e/flyte_cli needs of a server: the flytekit config reaching the API pod."""

    config_path: Path

    def client_env(self) -> dict[str, str]:
        return {**without_flyte_settings(dict(os.environ)), "FLYTECTL_CONFIG": str(self.config_path)}


class PodWatch:
    """Every task pod the cluster creates, by uid, from before the first execution to the end."""

    def __init__(self, cluster):
        from kubernetes import client, watch

        self.core = client.CoreV1Api(cluster.api_client())
        self.uids: dict[tuple[str, str], set[str]] = defaultdict(set)  # (execution, pod name) -> uids
        self.ended: str | None = None  # why the watch ended before the test stopped it
        self._stopping = False
        self._watch = watch.Watch()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        try:
            for event in self._watch.stream(self.core.list_pod_for_all_namespaces,
                                            label_selector="flytelite.io/managed=true", timeout_seconds=1800):
                pod = event["object"]
                execution = (pod.metadata.labels or {}).get("execution-id", "")
                self.uids[(execution, pod.metadata.name)].add(pod.metadata.uid)
            self.ended = "the watch request ended"
        except Exception as exc:  # noqa: BLE001 - reported by the test, unless it stopped the watch
            if not self._stopping:
                self.ended = repr(exc)

    def pods_of(self, execution: str) -> dict[str, set[str]]:
        """Pod name -> the uids seen by that name, for one execution's pods."""
        assert self.ended is None, f"the pod watch stopped early, pods may be missed: {self.ended}"
        return {name: uids for (ex, name), uids in list(self.uids.items()) if ex == execution}

    def stop(self) -> None:
        self._stopping = True
        self._watch.stop()


def test_overlays_build_and_the_cluster_accepts_them(k8s_cluster):
    for overlay in ("single", "api-engine"):
        kubectl(k8s_cluster, "apply", "--dry-run=client", "-k", str(DEPLOY / "overlays" / overlay))
    rendered = list(yaml.safe_load_all(kubectl(k8s_cluster, "kustomize", str(DEPLOY / "overlays" / "api-engine")).stdout))
    deployments = {d["metadata"]["name"]: d for d in rendered if d["kind"] == "Deployment"}
    args = {name: d["spec"]["template"]["spec"]["containers"][0]["args"] for name, d in deployments.items()}
    assert args == {"flytelite": ["start", "--config", "/etc/flytelite/config.yaml", "--role", "api"],
                    "flytelite-engine": ["start", "--config", "/etc/flytelite/config.yaml", "--role", "engine"]}
    assert {d["metadata"]["namespace"] for d in rendered if d["kind"] not in ("Namespace", "ClusterRole",
                                                                             "ClusterRoleBinding")} == {NAMESPACE}


@pytest.fixture
def backing(tmp_path, k8s_cluster):
    """PostgreSQL and moto's S3 on this machine, listening where the cluster's pods reach them."""
    pg = PostgresCluster(listen="*", trusted_networks=("10.0.0.0/8",))
    s3 = S3TestServer(free_port(), tmp_path / "moto.log", listen="0.0.0.0")
    pg.start()
    try:
        s3.start()
        try:
            create_database(pg.url, "flytelite")
            yield pg, s3
        finally:
            s3.stop()
    finally:
        pg.stop()


def overlay(folder: Path, gateway: str, pg: PostgresCluster, s3: S3TestServer) -> Path:
    """The api-engine overlay with this cluster's and this test's addresses."""
    folder.mkdir()
    config = {
        "database_url": "${FLYTELITE_DATABASE_URL}", "home": "/var/lib/flytelite", "metrics_port": 30081,
        "host": "0.0.0.0",
        "storage_root": f"s3://{s3.bucket}/deploy",
        "s3": {"endpoint": f"http://{gateway}:{s3.port}", "public_endpoint": f"http://127.0.0.1:{s3.port}",
               "access_key_id": s3.access_key_id, "secret_access_key": s3.secret_access_key, "region": "us-east-1"},
        "plugins": {"python-task": "kubernetes"},
        "kubernetes": {"images": {"default": TASK_IMAGE}, "image_pull_policy": "Never"},
        "logging": {"format": "json"},
    }
    (folder / "config.yaml").write_text(yaml.safe_dump(config))
    in_this_cluster = {"hostAliases": [{"ip": gateway, "hostnames": ["kubernetes.default.svc", "db", "s3"]}],
                       "containers": [{"name": "flytelite", "imagePullPolicy": "Never", "env": [
                           {"name": "KUBERNETES_SERVICE_HOST", "value": "kubernetes.default.svc"},
                           {"name": "KUBERNETES_SERVICE_PORT", "value": str(APISERVER_PORT)}]}]}
    patches = [{"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": name},
                "spec": {"template": {"spec": in_this_cluster}}} for name in ("flytelite", "flytelite-engine")]
    (folder / "patches.yaml").write_text(yaml.safe_dump_all(patches))
    (folder / "kustomization.yaml").write_text(yaml.safe_dump({
        "bases": [os.path.relpath(DEPLOY / "overlays" / "api-engine", folder)],
        "namespace": NAMESPACE,
        "patchesStrategicMerge": ["patches.yaml"],
        "configMapGenerator": [{"name": "flytelite-config", "behavior": "replace", "files": ["config.yaml"]}],
        "secretGenerator": [{"name": "flytelite", "literals": [
            f"database-url=postgresql+psycopg://postgres@db:{pg.port}/flytelite"]}],
    }))
    return folder


def ready_pods(k8s_cluster, component: str) -> list[dict]:
    pods = json.loads(kubectl(k8s_cluster, "-n", NAMESPACE, "get", "pods", "-o", "json", "-l",
                              f"app.kubernetes.io/component={component}").stdout)["items"]
    return [p for p in pods if p["metadata"].get("deletionTimestamp") is None and any(
        c["type"] == "Ready" and c["status"] == "True" for c in p["status"].get("conditions", []))]


def test_flytelite_runs_as_pods_and_loses_nothing_across_engine_restarts(k8s_cluster, backing, tmp_path):
    for archive in (f"flytelite-{VERSION}.tar", f"flytelite-flytekit-{VERSION}.tar"):
        if not (IMAGES / archive).exists():
            pytest.fail(f"{IMAGES / archive} is missing: run `make image` first (make test-deploy does)")
        k8s_cluster.import_image(IMAGES / archive)
    pg, s3 = backing
    folder = overlay(tmp_path / "overlay", k8s_cluster.pod_gateway, pg, s3)
    watch = PodWatch(k8s_cluster)
    kubectl(k8s_cluster, "apply", "-k", str(folder))
    try:
        for deployment in ("flytelite", "flytelite-engine"):
            kubectl(k8s_cluster, "-n", NAMESPACE, "rollout", "status", f"deployment/{deployment}", "--timeout=300s")
        # The service account may do what flytelite does, and nothing else.
        sa = "system:serviceaccount:flytelite:flytelite"
        assert kubectl(k8s_cluster, "auth", "can-i", "create", "pods", "-n", TASKS_NAMESPACE, "--as", sa).stdout.strip() == "yes"
        assert kubectl(k8s_cluster, "auth", "can-i", "list", "secrets", "-n", TASKS_NAMESPACE, "--as", sa,
                       check=False).stdout.strip() == "no"

        api_ip = ready_pods(k8s_cluster, "api")[0]["status"]["podIP"]
        client = DeployedFlytelite(tmp_path / "flytekit.yaml")
        client.config_path.write_text(
            f"admin:\n  endpoint: dns:///{api_ip}:30080\n  insecure: true\n" + s3.client_config())
        code = tmp_path / "code"
        code.mkdir()
        (code / "deploy_flows.py").write_text((Path(__file__).parent / "workflows" / "deploy_flows.py").read_text())
        names = [run_remote(client, code, "deploy_flows.py", "deploy_chain_wf", "--x", str(x)) for x in (0, 100)]

        def started(count: int):
            return all(len(watch.pods_of(n)) >= count for n in names)

        wait_for(lambda: started(2), "the second task pod of each execution", timeout=300)
        kubectl(k8s_cluster, "-n", NAMESPACE, "rollout", "restart", "deployment/flytelite-engine")
        kubectl(k8s_cluster, "-n", NAMESPACE, "rollout", "status", "deployment/flytelite-engine", "--timeout=300s")
        wait_for(lambda: started(4), "the fourth task pod of each execution", timeout=300)
        victim = ready_pods(k8s_cluster, "engine")[0]["metadata"]["name"]
        kubectl(k8s_cluster, "-n", NAMESPACE, "delete", "pod", victim)

        for name, x in zip(names, (0, 100), strict=True):
            done = finished(client, name, timeout=600)
            assert done.closure.phase == WorkflowExecutionPhase.SUCCEEDED, done.error
            assert done.outputs["o0"] == x + 21
            # Six tasks, six pods, each created once: nothing ran twice or was retried.
            pods = watch.pods_of(name)
            assert len(pods) == 6 and all(len(uids) == 1 for uids in pods.values()), pods
    except BaseException:
        for component in ("api", "engine"):
            print(kubectl(k8s_cluster, "-n", NAMESPACE, "logs", "-l", f"app.kubernetes.io/component={component}",
                          "--tail=40", check=False).stdout)
        raise
    finally:
        watch.stop()
        kubectl(k8s_cluster, "delete", "-k", str(folder), "--wait=true", "--timeout=120s", check=False)
