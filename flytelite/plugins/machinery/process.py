"""An attempt that is a process on this machine: the contract between what a task type runs (a TaskProcess)
and the plugin that runs it (plugins/local's LocalProcessPlugin), as flyteplugins' k8s Plugin interface is the
contract between a task type's resource and its plugin manager.

A TaskProcess says whether an attempt can run at all, what command it runs, how to read its result and which
logs it has. The runner owns the rest: the task slot, the warm or cold start, the watch on the process,
adoption after a restart, abort, and the attempt's folders. A TaskProcess keeps no state of its own between
calls; what it is given of an attempt (an Attempt) is what the runner recorded.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from flyteidl.core import execution_pb2

from flytelite.context import Context
from flytelite.idl import error_codes as E
from flytelite.idl.error_kinds import SYSTEM
from flytelite.plugins.machinery import processes
from flytelite.plugins.machinery.core import PluginPhase, PluginPhaseInfo, TaskExecutionContext
from flytelite.plugins.machinery.environment import flyte_task_env
from flytelite.plugins.machinery.results import written_result
from flytelite.plugins.machinery.task_site import IMAGE_ENV, task_process_env


@dataclass(frozen=True)
class Attempt:
    """One attempt's process as the runner made it: its marker (an environment variable that names the process
    so that it can be found after a restart), its folders and log, and, once it ended, how."""

    marker: str
    work_dir: str
    log_path: str
    # The process's TMPDIR, and the folder for a Ray cluster's session files (short: it holds Unix sockets).
    temp_dir: str
    ray_dir: str
    output_prefix: str
    pid: int | None = None
    exit_code: int | None = None


class TaskProcess:
    """How a task type's attempt runs as a process on this machine. The defaults read the result as flytekit's
    entrypoint writes it (outputs.pb, error.pb, futures.pb under the output prefix) and link the attempt's log."""

    # The plugin's id and the task types it runs; a default one also runs the tasks of types no plugin runs
    # when they carry a container (see PluginRegistry).
    id: str = ""
    task_types: tuple[str, ...] = ()
    is_default: bool = False
    # Whether an attempt may be forked from a warm zygote (only flytekit's entrypoint, started once per attempt).
    forks_warm: bool = False

    def __init__(self, ctx: Context):
        self.ctx = ctx

    def refuse(self, tctx: TaskExecutionContext) -> PluginPhaseInfo | None:
        """A failure when the attempt cannot run here (checked before anything starts); None: it can."""
        return None

    def command(self, tctx: TaskExecutionContext, attempt: Attempt) -> tuple[list[str], dict[str, str]]:
        """The process's argv and environment (raises TemplateError for a command that cannot be rendered)."""
        raise NotImplementedError

    def result(self, tctx: TaskExecutionContext, attempt: Attempt) -> PluginPhaseInfo:
        """The attempt's outcome once its process is gone (or was never seen, after a restart)."""
        logs = self.logs(attempt)
        written = written_result(self.ctx.blobs, attempt.output_prefix, logs, attempt.log_path)
        if written is not None:
            return written
        code = attempt.exit_code
        if code == 0 and not len(tctx.task.interface.outputs.variables):
            return PluginPhaseInfo(PluginPhase.SUCCESS, logs=logs)
        message = processes.with_log_tail(
            f"the task process (pid {attempt.pid}) {processes.how_it_ended(code)} without writing outputs.pb or "
            f"error.pb to {attempt.output_prefix}", attempt.log_path)
        return PluginPhaseInfo.failure(E.PROCESS_LOST, message, kind=SYSTEM, retryable=True, logs=logs)

    def logs(self, attempt: Attempt) -> list[execution_pb2.TaskLog]:
        """The attempt's log links: its log file, served by this server."""
        try:
            rel = Path(attempt.log_path).relative_to(self.ctx.config.logs_dir).as_posix()
        except ValueError:
            return []
        return [execution_pb2.TaskLog(uri=f"{self.ctx.public_url}/logs/{rel}", name="Task log (local process)")]

    def ended(self, attempt: Attempt) -> None:
        """Called once an attempt that ran on this machine is finalized (the runner has released its slot)."""

    def environment(self, tctx: TaskExecutionContext, attempt: Attempt, bin_dir: str) -> dict[str, str]:
        """The server's environment with Flyte's for the attempt, the marker and the image, and `bin_dir` (the
        image's interpreter's folder) first on PATH."""
        env = dict(os.environ)
        env.update(flyte_task_env(tctx, self.ctx))
        env.update({
            "PYTHONUNBUFFERED": "1",
            processes.MARKER_ENV: attempt.marker,
            IMAGE_ENV: tctx.container.image,
        })
        env.setdefault("RAY_TMPDIR", attempt.ray_dir)
        # pyflyte-fast-execute starts `pyflyte-execute` through PATH: it must be the image's one.
        env["PATH"] = bin_dir + os.pathsep + env.get("PATH", "")
        return task_process_env(env)
