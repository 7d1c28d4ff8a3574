"""The pod of one task attempt, as FlytePropeller's container and pod helpers build it.

The primary container runs the task's command and args rendered exactly as for a local process
(`pyflyte-fast-execute … pyflyte-execute --inputs … --output-prefix …`), with the task's image (mapped
by `kubernetes.images`), its resources (a missing request takes the limit or the configured default,
a missing limit the request; GPUs as nvidia.com/gpu), its env plus Flyte's, and its secrets delivered
as FlytePropeller's secret webhook delivers them. A task's own pod spec (flytekit's `pod_template`) is
the starting point when it has one; a named PodTemplate (`pod_template_name`) is merged beneath it.
Pods are plain dicts in the API's JSON shape: what the apiserver takes and what templates merge into.
"""

from __future__ import annotations

import base64
import copy
import os
from collections.abc import Callable, Sequence
from typing import Any

from flyteidl.core import security_pb2, tasks_pb2

from flytelite.config import KubernetesConfig
from flytelite.kubeclient import MANAGED_LABEL
from flytelite.plugins.kubernetes import copilot, names
from flytelite.plugins.machinery.core import TaskExecutionContext
from flytelite.plugins.machinery.target import PRIMARY, pod_spec, primary_container_name

SECRETS_DIR = "/etc/flyte/secrets"
# Where task pods find the task client's secret (flytekit's default client secret location).
CLIENT_SECRET_DIR, CLIENT_SECRET_KEY = "/etc/secrets", "client_secret"
CLIENT_SECRET_FILE = f"{CLIENT_SECRET_DIR}/{CLIENT_SECRET_KEY}"
SECRETS_ENV_PREFIX = "_FSEC_"
_RESOURCE_NAMES = {
    tasks_pb2.Resources.CPU: "cpu",
    tasks_pb2.Resources.MEMORY: "memory",
    tasks_pb2.Resources.GPU: "nvidia.com/gpu",
    tasks_pb2.Resources.EPHEMERAL_STORAGE: "ephemeral-storage",
}
Pod = dict[str, Any]


# Fills in Flyte's {{.input}}-style templates of a command for the attempt.
Render = Callable[[list[str]], list[str]]


def build_pod(tctx: TaskExecutionContext, cfg: KubernetesConfig, render: Render, env: dict[str, str],
              namespace: str, base_template: Pod | None = None, host_mounts: Sequence[str] = (),
              store_root: str = "") -> Pod:
    """The pod manifest of this attempt, its primary container's command rendered by `render`, with `env`
    (a raw container's also gets helpers reading and writing the blob store at `store_root`)."""
    task = tctx.task
    name = names.pod_name(tctx.key, tctx.node_id, tctx.attempt)
    spec, primary_name = _task_pod_spec(task)
    if base_template is not None:
        spec = merge_template(base_template.get("spec", {}), spec, primary_name)
    containers = spec.setdefault("containers", [])
    primary = next((c for c in containers if c.get("name") == primary_name), None)
    if primary is None:
        primary = {"name": primary_name}
        containers.insert(0, primary)
    if task.HasField("container"):
        container = task.container
        primary["image"] = container.image
        command, args = list(container.command), list(container.args)
        resources = container.resources
    else:
        command, args = primary.get("command", []), primary.get("args", [])
        resources = tasks_pb2.Resources()
    # Command and args stay apart, as FlytePropeller keeps them (an empty command runs the image's entrypoint).
    rendered = render(command + args)
    primary["command"], primary["args"] = rendered[:len(command)], rendered[len(command):]
    if not primary["command"]:
        del primary["command"]
    image = primary.get("image", "")
    primary["image"] = cfg.images.get(image) or cfg.images.get("default") or image
    primary["resources"] = requirements(resources, primary.get("resources"), cfg)
    primary.setdefault("imagePullPolicy", cfg.image_pull_policy)
    primary.setdefault("terminationMessagePolicy", "FallbackToLogsOnError")
    primary["env"] = _env_list({**cfg.env, **env}, primary.get("env", []))
    if copilot.uses_copilot(task):
        copilot.add_copilot(spec, primary, tctx, cfg, _env_list({**cfg.env, **env}, []), store_root)
    spec["restartPolicy"] = spec.get("restartPolicy") or "Never"
    if cfg.host_network and "hostNetwork" not in spec:
        spec["hostNetwork"] = True
        spec["dnsPolicy"] = "ClusterFirstWithHostNet"
    service_account = tctx.spec.service_account or cfg.service_account
    if service_account and not spec.get("serviceAccountName"):
        spec["serviceAccountName"] = service_account
    interruptible = _interruptible(tctx)
    if interruptible:
        spec["tolerations"] = list(spec.get("tolerations", [])) + copy.deepcopy(cfg.interruptible_tolerations)
        spec["nodeSelector"] = {**spec.get("nodeSelector", {}), **cfg.interruptible_node_selector}
    _mount_host_paths(spec, host_mounts)
    _add_secrets(spec, primary, list(task.security_context.secrets))
    metadata = _metadata(tctx, name, namespace, primary_name, interruptible, base_template)
    return {"apiVersion": "v1", "kind": "Pod", "metadata": metadata, "spec": spec}


def _task_pod_spec(task: tasks_pb2.TaskTemplate) -> tuple[dict, str]:
    """The task's own pod spec (flytekit pod_template) and its primary container's name, or an empty spec."""
    spec = pod_spec(task)
    return spec, primary_container_name(task) if spec else PRIMARY


def merge_template(base: dict, spec: dict, primary_name: str) -> dict:
    """A PodTemplate's spec beneath the task's, as FlytePropeller merges them: the task's values win, lists
    are appended, and each container starts from the template's `default` container (and for the primary
    also its `primary` one) and a template container of the same name."""
    base = copy.deepcopy(base)
    by_name = {c.get("name"): c for c in base.pop("containers", [])}
    merged = _deep_merge(base, {k: v for k, v in spec.items() if k != "containers"})
    containers = []
    for container in spec.get("containers", []) or [{"name": primary_name}]:
        start: dict = {}
        for template_name in ("default", PRIMARY if container.get("name") == primary_name else None,
                              container.get("name")):
            if template_name in by_name:
                start = _deep_merge(start, by_name[template_name])
        containers.append(_deep_merge(start, {**container}))
    merged["containers"] = containers
    return merged


def _deep_merge(base: Any, over: Any) -> Any:
    if isinstance(base, dict) and isinstance(over, dict):
        out = dict(base)
        for key, value in over.items():
            out[key] = _deep_merge(base[key], value) if key in base else copy.deepcopy(value)
        return out
    if isinstance(base, list) and isinstance(over, list):
        return copy.deepcopy(base) + copy.deepcopy(over)
    return copy.deepcopy(over)


def requirements(resources: tasks_pb2.Resources, existing: dict | None, cfg: KubernetesConfig) -> dict:
    """Requests and limits as FlytePropeller's AdjustOrDefaultResource sets them, except the CPU limit of a
    task that names no CPU: `kubernetes.default_cpu_limit` (none by default)."""
    requests = dict((existing or {}).get("requests", {}))
    limits = dict((existing or {}).get("limits", {}))
    for entry in resources.requests:
        if entry.name in _RESOURCE_NAMES and entry.value:
            requests[_RESOURCE_NAMES[entry.name]] = entry.value
    for entry in resources.limits:
        if entry.name in _RESOURCE_NAMES and entry.value:
            limits[_RESOURCE_NAMES[entry.name]] = entry.value
    named_cpu = bool(requests.get("cpu") or limits.get("cpu"))
    for name, default in (("cpu", cfg.default_cpu), ("memory", cfg.default_memory)):
        requests[name] = requests.get(name) or limits.get(name) or default
        limits.setdefault(name, requests[name])
    if not named_cpu:
        # A task that names no CPU gets the default request and the default limit (none: it may use idle cores).
        if cfg.default_cpu_limit:
            limits["cpu"] = cfg.default_cpu_limit
        else:
            del limits["cpu"]
    for name in ("nvidia.com/gpu", "ephemeral-storage"):
        if name in requests or name in limits:
            requests[name] = requests.get(name) or limits[name]
            limits[name] = limits.get(name) or requests[name]
    return {"requests": requests, "limits": limits}


def _env_list(env: dict[str, str], existing: list[dict]) -> list[dict]:
    """The container's env: its own entries (a template's), then ours; ours win by name."""
    ours = [{"name": k, "value": v} for k, v in env.items()]
    return [e for e in existing if e.get("name") not in env] + ours


def _interruptible(tctx: TaskExecutionContext) -> bool:
    if tctx.spec.interruptible is not None:
        return tctx.spec.interruptible
    return tctx.task.metadata.interruptible


def _metadata(tctx: TaskExecutionContext, name: str, namespace: str, primary_name: str, interruptible: bool,
              base_template: Pod | None) -> dict:
    project, domain, execution = tctx.key
    base = (base_template or {}).get("metadata", {})
    task = tctx.task
    workflow = tctx.spec.workflow.split("/")[2] if tctx.spec.workflow.count("/") >= 2 else tctx.workflow_id.name
    labels = {
        **base.get("labels", {}),
        **dict(task.k8s_pod.metadata.labels), **tctx.spec.labels,
        "execution-id": names.label_value(execution), "project": names.label_value(project),
        "domain": names.label_value(domain), "workflow-name": names.label_value(workflow),
        "node-id": names.label_value(tctx.node_id), "task-name": names.label_value(task.id.name),
        "interruptible": "true" if interruptible else "false",
        MANAGED_LABEL: "true", names.ATTEMPT_LABEL: str(tctx.attempt),
    }
    if len(task.security_context.secrets):
        labels["inject-flyte-secrets"] = "true"
    annotations = {
        "cluster-autoscaler.kubernetes.io/safe-to-evict": "false",
        **base.get("annotations", {}), **dict(task.k8s_pod.metadata.annotations), **tctx.spec.annotations,
        "primary_container_name": primary_name,
        # Which execution, node and attempt the pod runs, unsanitised (labels must be short and plain).
        "flytelite.io/execution": f"{project}/{domain}/{execution}",
        "flytelite.io/node": tctx.node_id,
        "flytelite.io/task": f"{task.id.name}@{task.id.version}",
    }
    return {"name": name, "namespace": namespace, "labels": labels, "annotations": annotations}


def _mount_host_paths(spec: dict, paths: Sequence[str]) -> None:
    """Host folders at the same path in every container (a single-node cluster on the server's machine)."""
    if not paths:
        return
    volumes = spec.setdefault("volumes", [])
    for i, path in enumerate(dict.fromkeys(os.path.normpath(p) for p in paths)):
        volume = f"flytelite-host-{i}"
        volumes.append({"name": volume, "hostPath": {"path": path, "type": "Directory"}})
        for container in spec.get("initContainers", []) + spec.get("containers", []):
            container.setdefault("volumeMounts", []).append({"name": volume, "mountPath": path})


def _add_secrets(spec: dict, primary: dict, secrets: list[security_pb2.Secret]) -> None:
    """Kubernetes secrets where flytekit's SecretsManager looks, as FlytePropeller's secret webhook puts them:
    secret `group`, key `key`; as env `_FSEC_<GROUP>_<KEY>` or as a file /etc/flyte/secrets/<group>/<key>."""
    if not secrets:
        return
    env = primary.setdefault("env", [])
    env.append({"name": "FLYTE_SECRETS_ENV_PREFIX", "value": SECRETS_ENV_PREFIX})
    files: dict[str, list[dict]] = {}
    for secret in secrets:
        ref = {"name": secret.group, "key": secret.key, "optional": True}
        if secret.mount_requirement == security_pb2.Secret.ENV_VAR:
            env.append({"name": f"{SECRETS_ENV_PREFIX}{secret.group}_{secret.key}".upper(),
                        "valueFrom": {"secretKeyRef": ref}})
            if secret.env_var:
                env.append({"name": secret.env_var, "valueFrom": {"secretKeyRef": ref}})
        else:
            files.setdefault(secret.group, []).append({"key": secret.key, "path": secret.key.lower()})
            if secret.env_var:
                env.append({"name": secret.env_var, "value": f"{SECRETS_DIR}/{secret.group}/{secret.key}".lower()})
    if files:
        env.append({"name": "FLYTE_SECRETS_DEFAULT_DIR", "value": SECRETS_DIR})
        env.append({"name": "FLYTE_SECRETS_FILE_PREFIX", "value": ""})
    for group, items in files.items():
        volume = _secret_volume_name(group)
        spec.setdefault("volumes", []).append(
            {"name": volume, "secret": {"secretName": group, "items": items, "optional": True}})
        for container in spec.get("containers", []):
            container.setdefault("volumeMounts", []).append(
                {"name": volume, "mountPath": f"{SECRETS_DIR}/{group.lower()}", "readOnly": True})


def mount_client_secret(spec: dict, secret_name: str) -> None:
    """The task client's secret (Secret `secret_name`, key client_secret) at CLIENT_SECRET_FILE in every
    container, read-only."""
    volume = "flytelite-client-secret"
    spec.setdefault("volumes", []).append(
        {"name": volume, "secret": {"secretName": secret_name, "items": [{"key": CLIENT_SECRET_KEY,
                                                                          "path": CLIENT_SECRET_KEY}]}})
    for container in spec.get("initContainers", []) + spec.get("containers", []):
        container.setdefault("volumeMounts", []).append(
            {"name": volume, "mountPath": CLIENT_SECRET_DIR, "readOnly": True})


def _secret_volume_name(group: str) -> str:
    encoded = base64.b32encode(group.encode()).decode().lower().rstrip("=")
    return names.dns_name(f"secret-{encoded}")[:63].rstrip("-.")
