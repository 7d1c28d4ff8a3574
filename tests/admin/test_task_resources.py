"""Task resources at launch as FlyteAdmin sets them (flytek8s' AdjustOrDefaultResource): defaults fill what a
task leaves out, limits cap requests and limits, a request never exceeds its limit."""

from __future__ import annotations

from flyteidl.admin import matchable_resource_pb2 as M
from flyteidl.core import compiler_pb2, tasks_pb2

from flytelite.admin import task_resources
from flytelite.config import TaskResourcesConfig

R = tasks_pb2.Resources


def _closure(requests: dict[int, str], limits: dict[int, str]) -> compiler_pb2.CompiledWorkflowClosure:
    closure = compiler_pb2.CompiledWorkflowClosure()
    resources = closure.tasks.add().template.container.resources
    resources.requests.extend([R.ResourceEntry(name=k, value=v) for k, v in requests.items()])
    resources.limits.extend([R.ResourceEntry(name=k, value=v) for k, v in limits.items()])
    closure.tasks.add().template.type = "no-container"
    return closure


def _resources(closure) -> tuple[dict, dict]:
    r = closure.tasks[0].template.container.resources
    return {e.name: e.value for e in r.requests}, {e.name: e.value for e in r.limits}


def test_defaults_fill_and_limits_cap():
    defaults, limits = {"cpu": "500m", "memory": "1Gi"}, {"cpu": "2", "memory": "4Gi"}
    closure = _closure({R.MEMORY: "8Gi"}, {})
    assert task_resources.apply(closure, defaults, limits)
    assert _resources(closure) == ({R.CPU: "500m", R.MEMORY: "4Gi"}, {R.CPU: "500m", R.MEMORY: "4Gi"})
    # A request above its own limit comes down to it; a limit alone is the request too.
    closure = _closure({R.CPU: "1500m"}, {R.CPU: "1", R.MEMORY: "2Gi"})
    task_resources.apply(closure, defaults, limits)
    assert _resources(closure) == ({R.CPU: "1", R.MEMORY: "2Gi"}, {R.CPU: "1", R.MEMORY: "2Gi"})
    # GPU only when something names it; a task without a container is left alone.
    closure = _closure({R.GPU: "3"}, {})
    task_resources.apply(closure, {}, {"gpu": "1"})
    assert _resources(closure)[0] == {R.GPU: "1"}
    assert not closure.tasks[1].template.HasField("container")


def test_matchable_attributes_win_over_the_server_per_resource():
    attributes = M.TaskResourceAttributes(defaults=M.TaskResourceSpec(cpu="250m"), limits=M.TaskResourceSpec(memory="512Mi"))
    defaults, limits = task_resources.platform(TaskResourcesConfig(defaults={"cpu": "1", "memory": "1Gi"},
                                                                   limits={"memory": "8Gi"}), attributes)
    assert defaults == {"cpu": "250m", "memory": "1Gi"} and limits == {"memory": "512Mi"}
    closure = _closure({}, {})
    task_resources.apply(closure, defaults, limits)
    assert _resources(closure) == ({R.CPU: "250m", R.MEMORY: "512Mi"}, {R.CPU: "250m", R.MEMORY: "512Mi"})
