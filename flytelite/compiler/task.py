"""Task compilation: validate a TaskTemplate the way Flyte's task compiler does.

A task needs an id. A container task needs an image, a command or args whenever it has inputs or
outputs (something must read/write them), and resource values that are valid Kubernetes quantities.
A pod task needs a pod spec whose container names are DNS-1123 labels. The template itself is
returned unchanged inside a CompiledTask.
"""

from __future__ import annotations

import re

from flyteidl.core import compiler_pb2, tasks_pb2
from google.protobuf import json_format

from flytelite.compiler import errors as E

# Kubernetes resource.Quantity: a signed decimal number with an optional binary-SI (Ki..Ei),
# decimal-SI (n, u, m, k, M, G, T, P, E) or exponent (e3, E-2) suffix.
_QUANTITY_RE = re.compile(r"^[+-]?(\d+(\.\d*)?|\.\d+)(Ki|Mi|Gi|Ti|Pi|Ei|[numkMGTPE]|[eE][+-]?\d+)?$")
_DNS1123_LABEL_RE = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")


def is_valid_quantity(value: str) -> bool:
    return bool(_QUANTITY_RE.match(value))


def is_dns1123_label(value: str) -> bool:
    return len(value) <= 63 and bool(_DNS1123_LABEL_RE.match(value))


def _validate_resources(resources: tasks_pb2.Resources, errs: E.Errors) -> None:
    for entries in (resources.requests, resources.limits):
        for entry in entries:
            if not is_valid_quantity(entry.value):
                name = tasks_pb2.Resources.ResourceName.Name(entry.name)
                errs.add(
                    E.UNRECOGNIZED_VALUE,
                    f"resources.{name}",
                    f"[{entry.value}] is not a valid quantity for resource {name} (e.g. 500m, 2, 1Gi).",
                )


def _validate_container(task: tasks_pb2.TaskTemplate, errs: E.Errors) -> None:
    container = task.container
    iface = task.interface
    has_io = task.HasField("interface") and (len(iface.inputs.variables) > 0 or len(iface.outputs.variables) > 0)
    if has_io and len(container.command) == 0 and len(container.args) == 0:
        errs.add(
            E.VALUE_REQUIRED,
            "container",
            "The task has inputs or outputs but its container has neither command nor args to run.",
        )
    if not container.image:
        errs.add(E.VALUE_REQUIRED, "container", "The task's container has no image.")
    if container.HasField("resources"):
        _validate_resources(container.resources, errs.scope())


def _validate_k8s_pod(task: tasks_pb2.TaskTemplate, errs: E.Errors) -> None:
    pod = task.k8s_pod
    spec = json_format.MessageToDict(pod.pod_spec) if pod.HasField("pod_spec") else None
    containers = spec.get("containers", []) if isinstance(spec, dict) else None
    if not isinstance(containers, list) or not all(isinstance(c, dict) for c in containers):
        errs.add(E.INVALID_VALUE, "root", "The task's k8s pod spec is missing or is not a valid pod spec.")
        return
    for c in containers:
        name = c.get("name", "")
        if not isinstance(name, str) or not is_dns1123_label(name):
            errs.add(
                E.INVALID_VALUE,
                "root",
                f"Pod container name [{name}] is invalid: use lower-case letters, digits and '-' (max 63).",
            )


def compile_task(task: tasks_pb2.TaskTemplate) -> compiler_pb2.CompiledTask:
    """Validate a task template; returns it as a CompiledTask or raises CompileError."""
    errs = E.Errors()
    if not task.HasField("id"):
        errs.add(E.VALUE_REQUIRED, "root", "The task has no id.")
    target = task.WhichOneof("target")
    if target == "container":
        _validate_container(task, errs.scope())
    elif target == "k8s_pod":
        _validate_k8s_pod(task, errs.scope())
    errs.raise_if_any()
    out = compiler_pb2.CompiledTask()
    out.template.CopyFrom(task)
    return out
