"""Tasks as pods on the project's real single-node cluster: `pyflyte run --remote` against a flytelite
server whose python tasks go to the kubernetes plugin. The pods run the project's own environment
through hostPath mounts (the skeleton task image) and reach the local blob store the same way."""

from __future__ import annotations

import base64
import signal
import subprocess
import urllib.request
from datetime import timedelta
from pathlib import Path

import pytest
from flytekit.models.core.execution import WorkflowExecutionPhase

from flytelite.testing import make_server
from flytelite.testing_k8s import cache_dir, flytelite_config
from tests.e2e.flyte_cli import copy_workflows, remote_for, run_remote, wait_for

pytestmark = pytest.mark.e2e

CHECKOUT = Path(__file__).resolve().parents[2]
FLOWS = Path(__file__).parent / "workflows"
P, D = "flytesnacks", "development"


@pytest.fixture(scope="module")
def folder(tmp_path_factory):
    return tmp_path_factory.mktemp("k8s")


@pytest.fixture(scope="module")
def k8s_server(k8s_cluster, folder):
    marks = folder / "marks"
    marks.mkdir()
    server = make_server(folder / "server", flytelite_config(k8s_cluster.kubeconfig, CHECKOUT, marks,
                                                             engine={"state": "kubernetes"}))
    server.start()
    yield server
    if server.proc is not None:
        server.stop()


@pytest.fixture(scope="module")
def code(folder):
    dest = copy_workflows(folder / "wf")
    (dest / "k8s_flows.py").write_text((FLOWS / "k8s_flows.py").read_text())
    return dest


def _wait(server, name: str, timeout: float = 300):
    remote = remote_for(server)
    return remote.wait(remote.fetch_execution(name=name), timeout=timedelta(seconds=timeout),
                       poll_interval=timedelta(seconds=0.5), sync_nodes=True)


def _pods(cluster, name: str) -> list[dict]:
    from kubernetes import client

    core = client.CoreV1Api(cluster.api_client())
    return [p for p in core.list_namespaced_pod(f"{P}-{D}", label_selector=f"execution-id={name}").items]


def test_a_task_runs_as_a_pod_named_after_its_attempt(k8s_cluster, k8s_server, code):
    name = run_remote(k8s_server, code, "k8s_flows.py", "where_wf")
    ex = _wait(k8s_server, name)
    assert ex.closure.phase == WorkflowExecutionPhase.SUCCEEDED, ex.error
    assert ex.outputs["o0"] == f"{name}-n0-0|{name}"  # the pod's host name is the pod's name
    (node,) = [n for n in ex.node_executions.values() if n.id.node_id == "n0"]
    (attempt,) = node.task_executions
    assert [log.name for log in attempt.closure.logs] == ["Kubernetes Logs (User)"]
    # Finished pods are cleaned up.
    wait_for(lambda: not _pods(k8s_cluster, name), "the finished pod to be deleted")


def test_each_execution_is_also_a_flyteworkflow_object(k8s_cluster, k8s_server, code):
    """engine.state: kubernetes: `kubectl get flyteworkflows` shows the execution and its phase."""
    from kubernetes import client

    name = run_remote(k8s_server, code, "k8s_flows.py", "where_wf")
    assert _wait(k8s_server, name).closure.phase == WorkflowExecutionPhase.SUCCEEDED
    custom = client.CustomObjectsApi(k8s_cluster.api_client())

    def finished():
        obj = custom.get_namespaced_custom_object("flyte.lyft.com", "v1alpha1", f"{P}-{D}", "flyteworkflows", name)
        return obj if obj["status"]["phase"] == 3 else None

    obj = wait_for(finished, "the FlyteWorkflow object to show the execution succeeded")
    assert obj["spec"]["id"] == f"{P}:{D}:k8s_flows.where_wf"
    assert obj["status"]["nodeStatus"]["n0"]["phase"] == 5  # Succeeded, in FlytePropeller's numbering
    assert obj["spec"]["nodes"]["n0"]["task"] in obj["tasks"]
    assert obj["metadata"]["labels"]["termination-status"] == "terminated"
    listed = subprocess.run([str(cache_dir() / "bin" / "kubectl"), "--kubeconfig", str(k8s_cluster.kubeconfig),
                             "get", "flyteworkflows", "-n", f"{P}-{D}", name], capture_output=True, text=True,
                            timeout=60)
    assert listed.returncode == 0 and "Succeeded" in listed.stdout, listed.stdout + listed.stderr


def test_a_diamond_a_map_task_and_a_dynamic_workflow_run_a_pod_per_task(k8s_server, code):
    mapped = run_remote(k8s_server, code, "k8s_flows.py", "k8s_map_wf", "--xs", "[1, 2, 3, 4]")
    dynamic = run_remote(k8s_server, code, "k8s_flows.py", "k8s_dynamic_wf", "--n", "3")
    diamond = run_remote(k8s_server, code, "k8s_flows.py", "k8s_diamond_wf", "--x", "2")
    ex = _wait(k8s_server, diamond)
    assert ex.closure.phase == WorkflowExecutionPhase.SUCCEEDED, ex.error
    assert ex.outputs["o0"] == 13  # 3 * 3 + (3 + 1)
    ex = _wait(k8s_server, mapped)
    assert ex.closure.phase == WorkflowExecutionPhase.SUCCEEDED, ex.error
    assert ex.outputs["o0"] == 30
    ex = _wait(k8s_server, dynamic)
    assert ex.closure.phase == WorkflowExecutionPhase.SUCCEEDED, ex.error
    assert ex.outputs["o0"] == 5


def test_a_recoverable_error_is_retried_in_a_new_pod(k8s_server, code):
    name = run_remote(k8s_server, code, "k8s_flows.py", "k8s_flaky_wf")
    ex = _wait(k8s_server, name)
    assert ex.closure.phase == WorkflowExecutionPhase.SUCCEEDED, ex.error
    assert ex.outputs["o0"] == 1
    (node,) = [n for n in ex.node_executions.values() if n.id.node_id == "n0"]
    assert [t.id.retry_attempt for t in node.task_executions] == [0, 1]


def test_a_raw_container_reads_its_inputs_and_leaves_its_outputs_as_files(k8s_server, code, folder):
    """flytekit's ContainerTask as a pod with co-pilot's helpers: numbers, text and files in and out."""
    doc = folder / "doc.txt"
    doc.write_text("a document\n")
    name = run_remote(k8s_server, code, "k8s_flows.py", "k8s_raw_files_wf", "--a", "2", "--name", "pod",
                      "--doc", str(doc))
    ex = _wait(k8s_server, name)
    assert ex.closure.phase == WorkflowExecutionPhase.SUCCEEDED, ex.closure.error
    assert ex.outputs["o0"] == 42 and ex.outputs["o1"] == "hello pod"
    assert ex.outputs["o2"] == "a document\nseen by the container"


def test_a_raw_containers_failures_are_reported_as_flyte_reports_them(k8s_server, code):
    names = {n: run_remote(k8s_server, code, "k8s_flows.py", "k8s_raw_wf", "--n", str(n)) for n in (8, 3, 0, -1)}
    done = {n: _wait(k8s_server, name) for n, name in names.items()}
    assert done[8].closure.phase == WorkflowExecutionPhase.SUCCEEDED and done[8].outputs["o0"] == 4
    errors = {n: done[n].closure.error for n in (3, 0, -1)}
    assert all(done[n].closure.phase == WorkflowExecutionPhase.FAILED for n in errors), errors
    assert "odd numbers have no half" in errors[3].message, errors[3]  # the container's _ERROR file
    assert "OutputsNotFound" in errors[0].code + errors[0].message and "half" in errors[0].message, errors[0]
    assert "exit code (3)" in errors[-1].message, errors[-1]  # the task's container, not a helper


def test_a_task_over_its_memory_limit_fails_oomkilled(k8s_server, code):
    name = run_remote(k8s_server, code, "k8s_flows.py", "k8s_hog_wf")
    ex = _wait(k8s_server, name)
    assert ex.closure.phase == WorkflowExecutionPhase.FAILED
    assert "OOMKilled" in ex.closure.error.code + ex.closure.error.message, ex.closure.error


def test_a_timeout_ends_the_attempt_and_deletes_its_pod(k8s_cluster, k8s_server, code):
    name = run_remote(k8s_server, code, "k8s_flows.py", "k8s_sleepy_wf", "--seconds", "60")
    ex = _wait(k8s_server, name)
    assert ex.closure.phase == WorkflowExecutionPhase.FAILED
    assert "TimeoutExpired" in ex.closure.error.code + ex.closure.error.message, ex.closure.error
    wait_for(lambda: not _pods(k8s_cluster, name), "the timed-out pod to be deleted")


def test_terminate_deletes_the_pod_and_logs_stream_while_it_runs(k8s_cluster, k8s_server, code, folder):
    name = run_remote(k8s_server, code, "k8s_flows.py", "k8s_slow_wf", "--marker_dir", str(folder / "marks" / "t"),
                      "--seconds", "120")
    remote = remote_for(k8s_server)

    def log_link():
        ex = remote.sync_execution(remote.fetch_execution(name=name), sync_nodes=True)
        return [log.uri for n in ex.node_executions.values() for t in n.task_executions for log in t.closure.logs
                if ex.closure.phase == WorkflowExecutionPhase.RUNNING and t.closure.phase == 2]  # RUNNING

    (uri,) = wait_for(log_link, "the running attempt's log link")
    with urllib.request.urlopen(uri, timeout=60) as stream:  # follows the running pod: lines keep coming
        ticks = []
        for line in stream:
            if line.startswith(b"tick"):
                ticks.append(line)
            if len(ticks) == 20:
                break
    assert ticks[-1] == b"tick 19\n", ticks
    remote.terminate(remote.fetch_execution(name=name), "enough")
    ex = _wait(k8s_server, name)
    assert ex.closure.phase == WorkflowExecutionPhase.ABORTED
    wait_for(lambda: not _pods(k8s_cluster, name), "the aborted pod to be deleted")


def test_a_restarted_server_adopts_the_running_pod(k8s_cluster, k8s_server, code, folder):
    marks = folder / "marks" / "restart"
    name = run_remote(k8s_server, code, "k8s_flows.py", "k8s_slow_wf", "--marker_dir", str(marks),
                      "--seconds", "8")
    wait_for(lambda: list(marks.glob("slow-*")) if marks.exists() else [], "the task to start in its pod")
    k8s_server.stop(sig=signal.SIGKILL)
    k8s_server.start()
    ex = _wait(k8s_server, name)
    assert ex.closure.phase == WorkflowExecutionPhase.SUCCEEDED, ex.error
    assert len(list(marks.glob("slow-*"))) == 1  # one pod, adopted, never a second one


def test_pods_in_flight_stay_under_the_cap(k8s_cluster, code, folder):
    """A map task with no concurrency of its own: with max_pods_in_flight 2 the items wait in QUEUED for
    room, never more than two of their pods exist unfinished at once, and the map still completes."""
    from kubernetes import client, watch

    server = make_server(folder / "capped", flytelite_config(k8s_cluster.kubeconfig, CHECKOUT,
                                                             max_pods_in_flight=2))
    server.start()
    core = client.CoreV1Api(k8s_cluster.api_client())
    try:
        name = run_remote(server, code, "k8s_flows.py", "k8s_wide_map_wf", "--xs", "[1, 2, 3, 4, 5, 6]")
        unfinished: set[str] = set()
        most = 0
        stream = watch.Watch().stream(core.list_namespaced_pod, f"{P}-{D}", label_selector=f"execution-id={name}",
                                      timeout_seconds=240)
        seen = set()
        for event in stream:
            pod = event["object"]
            seen.add(pod.metadata.name)
            if event["type"] != "DELETED" and pod.status.phase not in ("Succeeded", "Failed"):
                unfinished.add(pod.metadata.name)
            else:
                unfinished.discard(pod.metadata.name)
            most = max(most, len(unfinished))
            if len(seen) == 7 and not unfinished:  # six items and the sum
                break
        ex = _wait(server, name)
        assert ex.closure.phase == WorkflowExecutionPhase.SUCCEEDED, ex.error
        assert ex.outputs["o0"] == 91
        assert most <= 2 and len(seen) == 7, (most, sorted(seen))
    finally:
        server.stop()


def test_pods_read_and_write_an_s3_store(k8s_cluster, s3, code, folder):
    """The multi-node way: the blob store is S3 (moto's server on this machine, which host-network pods
    reach), nothing of the store is mounted, and the pods (a raw container's helpers too) read inputs and
    write outputs in the bucket."""
    config = flytelite_config(k8s_cluster.kubeconfig, CHECKOUT, host_network=True) + s3.server_config("pods")
    server = make_server(folder / "s3-pods", config)
    with open(server.config_path, "a") as f:
        f.write(s3.client_config())
    server.start()
    try:
        name = run_remote(server, code, "k8s_flows.py", "k8s_map_wf", "--xs", "[1, 2, 3]")
        doc = folder / "s3-doc.txt"
        doc.write_text("in the bucket\n")
        raw = run_remote(server, code, "k8s_flows.py", "k8s_raw_files_wf", "--a", "1", "--name", "s3",
                         "--doc", str(doc))
        ex = _wait(server, name)
        assert ex.closure.phase == WorkflowExecutionPhase.SUCCEEDED, ex.error
        assert ex.outputs["o0"] == 14
        # A raw container's helpers reach the bucket too.
        raw_ex = _wait(server, raw)
        assert raw_ex.closure.phase == WorkflowExecutionPhase.SUCCEEDED, raw_ex.closure.error
        assert raw_ex.outputs["o2"] == "in the bucket\nseen by the container"
        listed = s3.client().list_objects_v2(Bucket=s3.bucket, Prefix=f"pods/metadata/propeller/{P}-{D}-{name}/")
        keys = [o["Key"] for o in listed.get("Contents", [])]
        assert any(k.endswith("/outputs.pb") for k in keys), keys
    finally:
        server.stop()


def test_a_pod_runs_in_the_trace_of_its_launch(k8s_cluster, folder):
    """With tracing on, creating an attempt's pod is a span of the execution's round, and the task's container
    gets that span's context as TRACEPARENT."""
    from tests.ops.otlp import Receiver

    receiver = Receiver()
    config = flytelite_config(k8s_cluster.kubeconfig, CHECKOUT) + f"tracing: {{enabled: true, endpoint: '{receiver.url}'}}\n"
    server = make_server(folder / "traced", config)
    server.start()
    try:
        name = run_remote(server, copy_workflows(folder / "traced-wf", "traced.py"), "traced.py", "traced_wf")
        ex = _wait(server, name)
        assert ex.closure.phase == WorkflowExecutionPhase.SUCCEEDED, ex.error
    finally:
        server.stop()  # sends the spans still buffered
        receiver.stop()
    # A create the apiserver refused for now (a new namespace's service account not made yet) is tried again
    # in a span of its own: the pod runs in the span of the create that made it.
    made = [s for s in receiver.named("launch kubernetes object")
            if ex.outputs["o0"].startswith(f"00-{s.trace_id.hex()}-{s.span_id.hex()}-")]
    assert len(made) == 1, (ex.outputs["o0"], receiver.named("launch kubernetes object"))
    launch = made[0]
    rounds = {s.span_id for s in receiver.named("propeller round") if s.trace_id == launch.trace_id}
    assert launch.parent_span_id in rounds


def test_with_authentication_pods_read_the_task_clients_secret_from_a_kubernetes_secret(k8s_cluster, folder):
    """An eager workflow's task calls the API from its pod with the task client's credentials: the secret
    comes from the Secret flyte-secret-auth that flytelite wrote into the namespace, mounted where flytekit
    reads it, and is nowhere in the pod's spec."""
    from kubernetes import client

    from flytelite.auth.task_clients import TaskClients
    from tests.auth.clients import CLIENT_SECRET, auth_config, client_secret_config

    config = (flytelite_config(k8s_cluster.kubeconfig, CHECKOUT, host_network=True, delete_finished_pods=False)
              + auth_config(access_token_seconds=60))
    server = make_server(folder / "auth", config)
    server.start()
    try:
        server.config_path = client_secret_config(server, folder / "auth-flytekit.yaml")
        name = run_remote(server, copy_workflows(folder / "auth-wf", "eager_static.py"), "eager_static.py",
                          "eager_a", "--x", "3")
        ex = _wait(server, name)
        assert ex.closure.phase == WorkflowExecutionPhase.SUCCEEDED, ex.error
        assert ex.outputs["o0"] == 8  # the eager task launched its subworkflow through the API
        task_secret = (server.home / "auth" / "task-client-secret").read_text().strip()
        assert task_secret and task_secret != CLIENT_SECRET
    finally:
        server.stop()
    core = client.CoreV1Api(k8s_cluster.api_client())
    secret = core.read_namespaced_secret("flyte-secret-auth", f"{P}-{D}")
    namespace_secret = TaskClients("flytepropeller", task_secret).namespace_secret(f"{P}-{D}")
    assert base64.b64decode(secret.data["client_secret"]).decode() == namespace_secret
    (pod,) = [p for p in core.list_namespaced_pod(f"{P}-{D}", label_selector=f"execution-id={name}").items]
    primary = pod.spec.containers[0]
    env = {e.name: e.value for e in primary.env}
    assert env["FLYTE_CREDENTIALS_CLIENT_ID"] == f"flytepropeller/{P}/{D}/{name}"
    assert env["FLYTE_CREDENTIALS_CLIENT_SECRET_LOCATION"] == "/etc/secrets/client_secret"
    assert "FLYTE_CREDENTIALS_CLIENT_SECRET" not in env
    assert task_secret not in str(pod.to_dict()) and namespace_secret not in str(pod.to_dict())
    assert any(m.mount_path == "/etc/secrets" and m.read_only for m in primary.volume_mounts)
