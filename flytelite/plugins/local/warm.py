"""The warm launch path of the local-process plugin: attempts forked from a zygote of their interpreter
(plugins/local/workers), which reports where each runs and when it ends.

An attempt sent to a zygote stays "launching" until the zygote says which process runs it (see
WarmPool.launch); a restart meanwhile finds that process by the pid file the zygote wrote. The zygote's news
wakes the execution, as a pod's start and end wake FlytePropeller.
"""

from __future__ import annotations

from collections.abc import Callable

from flyteidl.core import execution_pb2

from flytelite.context import Context
from flytelite.idl import error_codes as E
from flytelite.idl.error_kinds import SYSTEM
from flytelite.metrics import OWN
from flytelite.plugins.local.state import HELD_VERSION
from flytelite.plugins.local.workers.pool import WarmAttempt, WarmPool
from flytelite.plugins.machinery.core import PluginPhase, PluginPhaseInfo, TaskExecutionContext

# The longest a round woken by a warm attempt's exit waits while the zygote holds work for its workers (see
# news).
BATCH_SECONDS = 0.05


def warm_pool(ctx: Context, temp_dir: str, max_processes: int) -> WarmPool | None:
    """The zygotes that attempts are forked from (None: engine.warm_workers is off), with their metrics."""
    engine = ctx.config.engine
    if not engine.warm_workers:
        return None
    warm = WarmPool(ctx.config.logs_dir, engine.warm_start_seconds, queue_seconds=engine.warm_queue_seconds,
                    temp_dir=temp_dir, max_processes=max_processes)
    ctx.metrics.gauge(f"{OWN}warm:forks", "Attempts forked from a zygote", lambda: warm.forks, "counter")
    ctx.metrics.gauge(f"{OWN}warm:reused", "Attempts run by a worker that had run another",
                      lambda: warm.reused, "counter")
    return warm


def sent(proc: WarmAttempt, logs: list[execution_pb2.TaskLog]) -> PluginPhaseInfo:
    """The phase of an attempt sent to a zygote that has not said where it runs (see WarmPool.launch). It counts
    as running, as one given to an idle worker does, unless it waits for a busy worker of its code version
    (WarmAttempt.waits): that one is queued, as a pod waiting to be scheduled is, until it starts. Its status
    stays "launching" until the round the zygote's answer wakes (as a pod's start wakes FlytePropeller), so a
    restart meanwhile looks for its process (by its pid file) before starting it again."""
    if proc.waits:
        return PluginPhaseInfo(PluginPhase.QUEUED, version=HELD_VERSION, logs=logs,
                               reason="waiting for a warm worker of its code version")
    return PluginPhaseInfo(PluginPhase.RUNNING, reason="sent to a warm worker", logs=logs)


def not_started(task_name: str, proc: WarmAttempt, logs: list[execution_pb2.TaskLog]) -> PluginPhaseInfo:
    """A warm attempt that did not start (its zygote's error, or the zygote died first): a retryable system
    error, as a failed fork."""
    why = proc.error or "its zygote exited before it started the attempt"
    return PluginPhaseInfo.failure(
        E.PROCESS_START_FAILED, f"could not start the process of task {task_name} in a warm worker: "
        f"{why}", kind=SYSTEM, retryable=True, logs=logs)


def news(tctx: TaskExecutionContext, proc: WarmAttempt) -> Callable[[], None]:
    """What wakes the execution when the zygote says a warm attempt started or ended: at once, unless the
    zygote is backlogged with its group's attempts (ZygoteHandle.backlogged), which the workers take
    without the server. Then the round can wait (up to BATCH_SECONDS, or until news comes with fewer held)
    and take the news of the meantime too, rather than a round per item's start and end, each with a round's
    fixed cost of reading and writing the execution."""
    return lambda: tctx.wake(BATCH_SECONDS if proc.zygote.backlogged(proc.group) else None)
