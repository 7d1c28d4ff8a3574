"""The `task_resources:` block of flytelite's configuration: tasks' default and largest resources
(FlyteAdmin's `task_resources`)."""

from __future__ import annotations

from dataclasses import dataclass, field

TASK_RESOURCE_NAMES = ("cpu", "memory", "gpu", "ephemeral_storage")


@dataclass
class TaskResourcesConfig:
    """The server's task resources (FlyteAdmin's `task_resources`): at launch each task's container gets its
    requests from these `defaults` where it names none, and no request or limit above these `limits`, unless
    TASK_RESOURCE matchable attributes say otherwise for its project, domain or workflow. Keys: cpu, memory,
    gpu, ephemeral_storage, as Kubernetes quantities ("500m", "1Gi"). Empty (the default): tasks keep theirs."""

    # Resource -> the request of a task's container that names none.
    defaults: dict[str, str] = field(default_factory=dict)
    # Resource -> the largest request or limit a task's container may have.
    limits: dict[str, str] = field(default_factory=dict)

    def __post_init__(self) -> None:
        for what, values in (("defaults", self.defaults), ("limits", self.limits)):
            unknown = set(values) - set(TASK_RESOURCE_NAMES)
            if unknown:
                raise ValueError(f"task_resources.{what} has {', '.join(sorted(unknown))}; the resources are "
                                 f"{', '.join(TASK_RESOURCE_NAMES)}")
