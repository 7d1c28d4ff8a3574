"""A stand-in for flytekit's `core-sleep` plugin (`flytekitplugins-sleep`, not on the package index): tasks
declared with `task_config=Sleep()` serialize with task type `core-sleep`, which the backend runs by waiting out
the task's one duration input. Run locally, such a task runs its (empty) body."""

from __future__ import annotations

from dataclasses import dataclass

from flytekit.core.python_function_task import PythonFunctionTask
from flytekit.extend import TaskPlugins

TASK_TYPE = "core-sleep"


@dataclass
class Sleep:
    """The task config that makes a `@task` a core-sleep task."""


class SleepTask(PythonFunctionTask[Sleep]):
    def __init__(self, task_config: Sleep, task_function, **kwargs):
        super().__init__(task_config=task_config, task_function=task_function, task_type=TASK_TYPE, **kwargs)


TaskPlugins.register_pythontask_plugin(Sleep, SleepTask)
