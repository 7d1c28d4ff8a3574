"""The Kubernetes rows of `make bench`: tasks as pods on the project's single-node cluster, beside the same
workflows as warm local processes.

The cluster (flytelite/testing_k8s.py) runs the project's own Python environment in the skeleton task
image through hostPath mounts, so a pod's cost here is Kubernetes' (scheduling, the sandbox, the container,
the kubelet's status updates) plus a cold interpreter importing flytekit: no warm worker to fork from.
- time per task: a POD_CHAIN-task chain's time (created to SUCCEEDED, the server's clock) / POD_CHAIN;
- a MAP_ITEMS-item map task, one pod per item.
Skipped with a note when the cluster cannot start here (binaries not built, not root).
"""

from __future__ import annotations

from pathlib import Path

from benchmarks.common import Row, baseline, integers
from benchmarks.server_client import BenchServer, execution_seconds
from benchmarks.workflows import pod_wfs
from flytelite.testing_k8s import KubernetesCluster, flytelite_config

CHECKOUT = Path(__file__).resolve().parent.parent
MAP_ITEMS = 100


def _measure(server: BenchServer, runs: int) -> tuple[list[float], list[float]]:
    """Per-task times of the chain and times of the map task, `runs` each (the first through pyflyte)."""
    chains, maps = [], []
    execution = server.wait(server.pyflyte_run("pod_wfs.py", "pod_chain"), poll=0.1)
    lp = execution.spec.launch_plan
    for i in range(runs):
        if i:
            execution = server.wait(server.create(lp, {}), poll=0.1)
        chains.append(execution_seconds(execution) / pod_wfs.POD_CHAIN)
    execution = server.wait(server.pyflyte_run("pod_wfs.py", "pod_map", "--xs", str(list(range(MAP_ITEMS)))),
                            poll=0.1)
    lp = execution.spec.launch_plan
    for i in range(runs):
        if i:
            execution = server.wait(server.create(lp, {"xs": integers(list(range(MAP_ITEMS)))}), poll=0.1)
        maps.append(execution_seconds(execution))
    return chains, maps


def k8s_rows(root: Path, runs: int) -> list[Row]:
    reason = KubernetesCluster.unavailable_reason()
    if reason is not None:
        return [Row("Kubernetes rows: skipped", [], "", note=reason)]
    with BenchServer(root / "local-warm") as local:
        local_chain, local_map = _measure(local, runs)
    cluster = KubernetesCluster()
    cluster.start()
    try:
        with BenchServer(root / "pods", flytelite_config(cluster.kubeconfig, CHECKOUT)) as server:
            pod_chain, pod_map = _measure(server, runs)
    finally:
        cluster.stop()
    return [
        Row(f"Kubernetes: time per task as a pod ({pod_wfs.POD_CHAIN}-task chain)", pod_chain, "s",
            note="one pod per attempt on a single-node cluster, cold interpreter in each pod",
            baselines=[baseline("warm local processes, same chain", local_chain, "s")]),
        Row(f"Kubernetes: {MAP_ITEMS}-item map task as pods", pod_map, "s",
            note="one pod per item, the map's default concurrency",
            baselines=[baseline("warm local processes", local_map, "s")]),
    ]
