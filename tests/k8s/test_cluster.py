"""The project's Kubernetes test cluster runs real pods: the project's own venv (flytekit) in a pod of the
skeleton task image through hostPath mounts, phases followed with a watch, logs read through the apiserver,
and a memory limit enforced by the kernel (OOMKilled)."""

from __future__ import annotations

import os
import sys
import time
import uuid
from pathlib import Path

import pytest

from flytelite.testing_k8s import TASK_IMAGE, python_host_paths

CHECKOUT = Path(__file__).resolve().parents[2]
NAMESPACE = "default"


class Pods:
    """Creates pods in the default namespace through the kubernetes client and deletes them at the end."""

    def __init__(self, api_client):
        from kubernetes import client

        self.core = client.CoreV1Api(api_client)
        self.created: list[str] = []

    def run_to_end(self, pod, timeout: float = 120):
        """Create the pod and follow it with a watch until it Succeeded or Failed.
        Returns (the last pod object seen, [(phase, seconds since create)], seconds)."""
        from kubernetes import watch

        name = pod.metadata.name
        start = time.monotonic()
        created = self.core.create_namespaced_pod(NAMESPACE, pod)
        self.created.append(name)
        phases: list[tuple[str, float]] = []
        last = created
        w = watch.Watch()
        # From the creation's resource version on: no event between create and watch is lost.
        for event in w.stream(self.core.list_namespaced_pod, NAMESPACE, field_selector=f"metadata.name={name}",
                              resource_version=created.metadata.resource_version, timeout_seconds=int(timeout)):
            last = event["object"]
            phase = last.status.phase
            if not phases or phases[-1][0] != phase:
                phases.append((phase, round(time.monotonic() - start, 2)))
            if phase in ("Succeeded", "Failed"):
                w.stop()
                break
        return last, phases, time.monotonic() - start

    def delete_all(self, timeout: float = 30) -> None:
        for name in self.created:
            self.core.delete_namespaced_pod(name, NAMESPACE, grace_period_seconds=0)
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if not {p.metadata.name for p in self.core.list_namespaced_pod(NAMESPACE).items} & set(self.created):
                break
            time.sleep(0.2)
        self.created.clear()


@pytest.fixture
def pods(k8s_cluster):
    api_client = k8s_cluster.api_client()
    pods = Pods(api_client)
    yield pods
    pods.delete_all()
    api_client.close()


def task_pod(name: str, command: list[str], host_paths: list[str], memory_limit: str | None = None):
    """A pod of the skeleton task image that runs `command` with `host_paths` mounted read-only."""
    from kubernetes import client

    volumes = [client.V1Volume(name=f"host-{i}", host_path=client.V1HostPathVolumeSource(path=p, type="Directory"))
               for i, p in enumerate(host_paths)]
    mounts = [client.V1VolumeMount(name=f"host-{i}", mount_path=p, read_only=True) for i, p in enumerate(host_paths)]
    resources = client.V1ResourceRequirements(limits={"memory": memory_limit}) if memory_limit else None
    return client.V1Pod(
        metadata=client.V1ObjectMeta(name=name, labels={"app": "flytelite-test"}),
        spec=client.V1PodSpec(
            restart_policy="Never", volumes=volumes,
            containers=[client.V1Container(name="main", image=TASK_IMAGE, image_pull_policy="Never",
                                           command=command, volume_mounts=mounts, resources=resources)]))


def test_project_venv_runs_in_a_pod(pods):
    import flytekit

    python = CHECKOUT / ".venv" / "bin" / "python"
    if not python.exists():
        pytest.skip(f"no project venv at {python}")
    # /usr, the venv's base interpreter (sys.base_prefix) unless it is under /usr, and the checkout.
    host_paths = python_host_paths(CHECKOUT)
    base = os.path.realpath(sys.base_prefix)
    assert host_paths[0] == "/usr" and str(CHECKOUT) in host_paths
    assert any(base == p or base.startswith(p + "/") for p in host_paths)

    name = f"flytekit-{uuid.uuid4().hex[:8]}"
    pod = task_pod(name, [str(python), "-c", "import flytekit; print(flytekit.__version__)"], host_paths)
    final, phases, seconds = pods.run_to_end(pod)
    log = pods.core.read_namespaced_pod_log(name, NAMESPACE)
    print(f"\n{name}: {' -> '.join(f'{p}@{t}s' for p, t in phases)}; created -> Succeeded in {seconds:.2f}s")
    assert final.status.phase == "Succeeded", (phases, final.status, log)
    assert log.strip() == flytekit.__version__


def test_memory_limit_ends_in_oomkilled(pods):
    name = f"oom-{uuid.uuid4().hex[:8]}"
    allocate = "data = b'x' * (200 * 1024 * 1024); print(len(data))"   # 200 MB, every page written
    pod = task_pod(name, ["/usr/bin/python3", "-c", allocate], ["/usr"], memory_limit="32Mi")
    final, phases, seconds = pods.run_to_end(pod)
    print(f"\n{name}: {' -> '.join(f'{p}@{t}s' for p, t in phases)}; created -> Failed in {seconds:.2f}s")
    assert final.status.phase == "Failed", (phases, final.status)
    terminated = final.status.container_statuses[0].state.terminated
    assert terminated is not None and terminated.reason == "OOMKilled", final.status.container_statuses
    assert terminated.exit_code == 137
