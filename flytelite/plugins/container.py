"""The raw-container plugin (task type "raw-container", flytekit's ContainerTask), run as a local process.

flytelite pulls no images: an image runs only when config `raw_container_images` maps it to a way of
running its command here ("local", or a command prefix); any other image fails the node saying which
config key to set. The command gets `{{.inputs.x}}` and the other template variables filled in, and
its input and output dirs (/var/inputs and /var/outputs in Flyte) become per-attempt folders: every
mention of them in the command, args and env is rewritten, inputs are laid out there before the
command starts and outputs read from there after it exits (plugins/machinery/copilot.py). Starting, watching,
adopting after a restart and killing the process are the local-process plugin's, which runs this TaskProcess.
"""

from __future__ import annotations

import os
import posixpath
import re
import signal
import sys
from pathlib import Path

from flytelite.idl import error_codes as E
from flytelite.idl.error_kinds import SYSTEM, USER
from flytelite.plugins.machinery import copilot, processes
from flytelite.plugins.machinery.core import PluginPhase, PluginPhaseInfo, TaskExecutionContext
from flytelite.plugins.machinery.process import Attempt, TaskProcess
from flytelite.plugins.machinery.template import TemplateError, rendered_command

CONFIG_KEY = "raw_container_images"


class RawContainerProcess(TaskProcess):
    id = "raw-container"
    task_types = ("raw-container",)
    # No flytekit in a raw container: nothing to fork warm.
    forks_warm = False

    def refuse(self, tctx: TaskExecutionContext) -> PluginPhaseInfo | None:
        image = tctx.task.container.image
        if self.ctx.config.raw_container_runner(image) is None:
            return PluginPhaseInfo.failure(E.IMAGE_NOT_MAPPED, _unmapped(tctx.task.id.name, image), kind=USER,
                                           retryable=False)
        return None

    def command(self, tctx: TaskExecutionContext, attempt: Attempt) -> tuple[list[str], dict[str, str]]:
        container = tctx.task.container
        runner = self.ctx.config.raw_container_runner(container.image)
        if runner is None:  # the config changed since the attempt was prepared
            raise TemplateError(_unmapped(tctx.task.id.name, container.image))
        argv = rendered_command(tctx)
        env = self.environment(tctx, attempt, os.path.dirname(sys.executable))
        # A raw container sees the machine's PATH, not the server's virtualenv first.
        env["PATH"] = {e.key: e.value for e in container.env}.get("PATH", os.environ.get("PATH", ""))
        dc = container.data_config
        if dc.enabled:
            local = _local_dirs(attempt)
            copilot.clean_dir(local["outputs"])
            try:
                copilot.write_inputs(self.ctx.blobs, tctx.inputs, copilot.clean_dir(local["inputs"]), dc.format)
            except (ValueError, OSError) as e:
                raise TemplateError(f"cannot lay out the inputs in {local['inputs']}: {e}") from None
            mapping = {dc.input_path or "/var/inputs": str(local["inputs"]),
                       dc.output_path or "/var/outputs": str(local["outputs"])}
            argv = [_map_paths(a, mapping) for a in argv]
            env = {k: _map_paths(v, mapping) for k, v in env.items()}
        return runner + argv, env

    def result(self, tctx: TaskExecutionContext, attempt: Attempt) -> PluginPhaseInfo:
        blobs = self.ctx.blobs
        logs = self.logs(attempt)
        outputs_uri = posixpath.join(attempt.output_prefix, "outputs.pb")
        if blobs.exists(outputs_uri):
            return PluginPhaseInfo(PluginPhase.SUCCESS, logs=logs)
        if attempt.exit_code:
            return self._exit_failure(tctx, attempt, attempt.exit_code, logs)
        dc = tctx.task.container.data_config
        out_dir = _local_dirs(attempt)["outputs"]
        if not dc.enabled or not out_dir.is_dir():
            # Nothing to collect (no data config, or a process adopted after a restart whose dir is gone).
            return super().result(tctx, attempt)
        try:
            outputs = copilot.read_outputs(blobs, tctx.task.interface.outputs, out_dir, tctx.raw_output_prefix)
        except copilot.ContainerReportedError as e:
            return PluginPhaseInfo.failure(E.CONTAINER_ERROR, f"User Error: {e}", kind=USER, retryable=True,
                                           logs=logs)
        except (copilot.OutputError, OSError) as e:
            return PluginPhaseInfo.failure(E.OUTPUTS_NOT_FOUND, f"task {tctx.task.id.name}: {e}", kind=USER,
                                           retryable=True, logs=logs)
        blobs.write_proto(outputs_uri, outputs)
        return PluginPhaseInfo(PluginPhase.SUCCESS, logs=logs)

    def _exit_failure(self, tctx: TaskExecutionContext, attempt: Attempt, code: int, logs) -> PluginPhaseInfo:
        """As Flyte judges a failed pod: a SIGKILL is a system error (preemption, OOM), anything else the user's."""
        image = tctx.task.container.image
        message = processes.with_log_tail(f"the command of raw container {image!r} (pid {attempt.pid}) "
                                          f"{processes.how_it_ended(code)}", attempt.log_path)
        if code == -signal.SIGKILL:
            return PluginPhaseInfo.failure(E.INTERRUPTED, message, kind=SYSTEM, retryable=True, logs=logs)
        return PluginPhaseInfo.failure(E.CONTAINER_FAILED, message, kind=USER, retryable=True, logs=logs)


def _unmapped(task_name: str, image: str) -> str:
    return (f"task {task_name} runs raw container image {image!r}, which flytelite does not pull or run in a "
            f"container; to run its command as a process on the server's machine, map the image in the "
            f"server config: `{CONFIG_KEY}: {{{image!r}: local}}` (or a command prefix instead of local)")


def _local_dirs(attempt: Attempt) -> dict[str, Path]:
    work = Path(attempt.work_dir)
    return {"inputs": work / "inputs", "outputs": work / "outputs"}


def _map_paths(text: str, mapping: dict[str, str]) -> str:
    """Rewrite mentions of the container's data dirs (as whole path components) to the local folders."""
    for container_path, local in mapping.items():
        container_path = container_path.rstrip("/") or "/"
        text = re.sub(r"(?<![\w.-])" + re.escape(container_path) + r"(?![\w.-])", lambda _m, p=local: p, text)  # type: ignore[misc]  # a lambda with a default
    return text
