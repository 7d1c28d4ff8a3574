"""What the compute plugins (Spark, Ray, Dask, PyTorch, MPI) share when they run a task on this machine: an attempt
is a local process as any task's (a TaskProcess that the local-process plugin starts in a session of its own,
holding a task slot, adopts after a restart and kills on abort and timeout), whose command brings the engine up for the task, runs it there and tears the engine down
(launcher.py), unless the configuration names a running cluster to join.

A plugin reads the task's `custom` as flyteplugins reads it and refuses what it cannot run before anything
starts: a bad or unknown-version config, an engine that is not installed in the task's environment (naming the
package), a shape larger than this machine (with the figures). Each engine process logs to a file of its own
beside the task's log, and each is a log link of the attempt. When the attempt ends, any process that still
carries its marker is killed, so nothing the engine started outlives it.
"""

from __future__ import annotations

import json
import os
import signal
from pathlib import Path

from flyteidl.core import execution_pb2

from flytelite.idl import error_codes as E
from flytelite.idl.error_kinds import USER
from flytelite.plugins.local.flytekit import FlytekitProcess
from flytelite.plugins.machinery import processes
from flytelite.plugins.machinery.core import PluginPhaseInfo, TaskExecutionContext
from flytelite.plugins.machinery.process import Attempt
from flytelite.plugins.machinery.taskspec import BadShape

LAUNCHER = str(Path(__file__).with_name("launcher.py"))


class EngineProcess(FlytekitProcess):
    """A compute engine's task type run on this machine; a subclass names the engine and shapes its cluster."""

    task_types: tuple[str, ...] = ()
    is_default = False
    # What the task's environment must have (see missing()): a program in its interpreter's folder, and the
    # package to install for it.
    program = ""
    package = ""
    # What the task's own process is, in its log link's name.
    role = "task"
    # An engine's processes are started anew for each attempt: nothing to fork warm.
    forks_warm = False

    def shape(self, tctx: TaskExecutionContext) -> dict:
        """The launcher's spec of the engine for this task (raises BadShape)."""
        raise NotImplementedError

    def missing(self, interpreter: str) -> str | None:
        """What the task's environment (that of `interpreter`) lacks to run the engine; None: nothing."""
        if os.path.exists(os.path.join(os.path.dirname(interpreter), self.program)):
            return None
        return (f"{self.package} in its environment ({interpreter}), which has no {self.program!r}: install it "
                f"there (pip install {self.package})")

    def refuse(self, tctx: TaskExecutionContext) -> PluginPhaseInfo | None:
        try:
            self.shape(tctx)
        except BadShape as e:
            return PluginPhaseInfo.failure(E.BAD_TASK_SPECIFICATION, f"task {tctx.task.id.name}: {e}", kind=USER,
                                           retryable=False)
        interpreter = self.ctx.config.interpreter_for(tctx.container.image)
        lacking = self.missing(interpreter)
        if lacking is not None:
            return PluginPhaseInfo.failure(
                E.BAD_TASK_SPECIFICATION, f"task {tctx.task.id.name} of type {tctx.task.type!r} needs {lacking}",
                kind=USER, retryable=False)
        return super().refuse(tctx)

    def command(self, tctx: TaskExecutionContext, attempt: Attempt) -> tuple[list[str], dict[str, str]]:
        argv, env = super().command(tctx, attempt)
        spec = {**self.shape(tctx), "log_dir": os.path.dirname(attempt.log_path),
                "log_prefix": Path(attempt.log_path).stem, "tmp": attempt.temp_dir, "ray_tmp": attempt.ray_dir}
        return [argv[0], LAUNCHER, json.dumps(spec), "--", *argv], env

    def logs(self, attempt: Attempt) -> list[execution_pb2.TaskLog]:
        logs = super().logs(attempt)
        if not logs:
            return logs
        logs[0].name = f"{self.role.capitalize()} log ({self.id})"
        path = Path(attempt.log_path)
        base = logs[0].uri[: -len(path.name)]
        for component in sorted(path.parent.glob(f"{path.stem}.*.log")):
            name = component.stem[len(path.stem) + 1:]
            logs.append(execution_pb2.TaskLog(uri=base + component.name, name=f"{name} log ({self.id})"))
        return logs

    def ended(self, attempt: Attempt) -> None:
        # Nothing the engine started outlives the attempt.
        for pid, started in processes.marked(attempt.marker):
            processes.kill(pid, started, signal.SIGKILL)
