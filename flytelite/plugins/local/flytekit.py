"""Tasks whose container runs flytekit's entrypoint (pyflyte-execute and its kin), as processes of the image's
interpreter: the image names a Python environment (config `images`), not something to pull."""

from __future__ import annotations

import os
import re

from flytelite.idl import error_codes as E
from flytelite.idl.error_kinds import USER
from flytelite.plugins.machinery.core import PluginPhaseInfo, TaskExecutionContext
from flytelite.plugins.machinery.process import Attempt, TaskProcess
from flytelite.plugins.machinery.template import rendered_command

PYFLYTE_COMMANDS = frozenset({"pyflyte-execute", "pyflyte-fast-execute", "pyflyte-map-execute"})
PYTHON_NAMES = re.compile(r"^python(3(\.\d+)?)?$")


class FlytekitProcess(TaskProcess):
    id = "local-process"
    # Besides python-task: flytekit task types that run flytekit's own entrypoint in their image (SQLite3Task,
    # eager workflows' failure handler). Raw containers have their own plugin (plugins/container.py).
    # flytekitplugins-pod's `sidecar` tasks run their pod's primary container; other task types that carry a
    # container run here too, this being the default plugin (registry.py).
    task_types: tuple[str, ...] = ("python-task", "container", "sqlite", "eager_failure_handler_task", "sidecar")
    is_default = True
    forks_warm = True
    # Refuse containers that do not run a flytekit entrypoint (a subclass may run any command).
    flytekit_entrypoint_only = True

    def refuse(self, tctx: TaskExecutionContext) -> PluginPhaseInfo | None:
        task, container = tctx.task, tctx.container
        argv0 = (list(container.command) + list(container.args))[0]
        if self.flytekit_entrypoint_only and task.type != "python-task" and argv0 not in PYFLYTE_COMMANDS:
            return PluginPhaseInfo.failure(
                E.UNSUPPORTED_CONTAINER, f"task {task.id.name} of type {task.type!r} runs {argv0!r} in image "
                f"{container.image!r}; flytelite runs containers locally only when they run a flytekit "
                "entrypoint (pyflyte-execute)", kind=USER, retryable=False)
        return None

    def command(self, tctx: TaskExecutionContext, attempt: Attempt) -> tuple[list[str], dict[str, str]]:
        argv = rendered_command(tctx)
        interpreter = self.ctx.config.interpreter_for(tctx.container.image)
        bin_dir = os.path.dirname(interpreter)
        if argv[0] in PYFLYTE_COMMANDS:
            # Console scripts are flytekit.bin.entrypoint's click commands: run them with the image's interpreter.
            argv = [interpreter, "-m", "flytekit.bin.entrypoint", *argv]
        elif PYTHON_NAMES.match(argv[0]):
            argv = [interpreter, *argv[1:]]
        elif not os.path.isabs(argv[0]) and os.path.exists(os.path.join(bin_dir, argv[0])):
            argv = [os.path.join(bin_dir, argv[0]), *argv[1:]]
        return argv, self.environment(tctx, attempt, bin_dir)
