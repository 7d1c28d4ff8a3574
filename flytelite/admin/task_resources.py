"""Task resources at launch, as FlyteAdmin sets a compiled task's defaults (execution_manager's
setCompiledTaskDefaults with flytek8s' AdjustOrDefaultResource): for CPU and memory (and GPU and ephemeral
storage when anything names them), a request the task leaves out is its limit, else the platform default; a
missing limit is the request; neither goes above the platform limit, and the request not above the limit.

The platform's defaults and limits are the most specific TASK_RESOURCE matchable attributes (workflow,
project-domain, project), each resource falling back to the server's `task_resources`.
"""

from __future__ import annotations

from flyteidl.admin import matchable_resource_pb2 as M
from flyteidl.core import compiler_pb2, tasks_pb2

from flytelite.config import TaskResourcesConfig
from flytelite.plugins.machinery.taskspec import BadShape, quantity

R = tasks_pb2.Resources
_NAMES = {"cpu": R.CPU, "memory": R.MEMORY, "gpu": R.GPU, "ephemeral_storage": R.EPHEMERAL_STORAGE}
# Set on every task with a container, as FlyteAdmin does; the others only when something names them.
_ALWAYS = ("cpu", "memory")


def platform(config: TaskResourcesConfig, attributes: M.TaskResourceAttributes | None) -> tuple[dict, dict]:
    """(defaults, limits) by resource name: the attributes' where set, else the server's."""
    defaults, limits = dict(config.defaults), dict(config.limits)
    if attributes is not None:
        for name in _NAMES:
            if getattr(attributes.defaults, name):
                defaults[name] = getattr(attributes.defaults, name)
            if getattr(attributes.limits, name):
                limits[name] = getattr(attributes.limits, name)
    return defaults, limits


def apply(closure: compiler_pb2.CompiledWorkflowClosure, defaults: dict[str, str], limits: dict[str, str]) -> bool:
    """Set the tasks' resources in `closure`; True if anything changed."""
    changed = False
    for compiled in closure.tasks:
        container = compiled.template.container if compiled.template.HasField("container") else None
        if container is None:
            continue
        before = container.resources.SerializeToString(deterministic=True)
        _adjust(container.resources, defaults, limits)
        changed |= container.resources.SerializeToString(deterministic=True) != before
    return changed


def _value(entries, kind: int) -> str:
    return next((e.value for e in entries if e.name == kind and e.value), "")


def _smaller(value: str, cap: str) -> str:
    """`value`, or `cap` when it is larger (either may be "")."""
    if not value or not cap:
        return value
    try:
        return cap if quantity(value) > quantity(cap) else value
    except BadShape:
        return value  # a quantity Kubernetes would refuse: left for the plugin to report


def _adjust(resources: tasks_pb2.Resources, defaults: dict[str, str], limits: dict[str, str]) -> None:
    requests = {name: _value(resources.requests, kind) for name, kind in _NAMES.items()}
    task_limits = {name: _value(resources.limits, kind) for name, kind in _NAMES.items()}
    final: dict[str, tuple[str, str]] = {}
    for name in _NAMES:
        if name not in _ALWAYS and not (requests[name] or task_limits[name] or defaults.get(name)):
            continue
        request = requests[name] or task_limits[name] or defaults.get(name, "")
        limit = task_limits[name] or request
        request, limit = _smaller(request, limits.get(name, "")), _smaller(limit, limits.get(name, ""))
        final[name] = (_smaller(request, limit), limit)
    del resources.requests[:], resources.limits[:]
    for name, (request, limit) in final.items():
        if request:
            resources.requests.add(name=_NAMES[name], value=request)
        if limit:
            resources.limits.add(name=_NAMES[name], value=limit)
