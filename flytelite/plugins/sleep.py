"""The core-sleep task plugin (flyteplugins' core/sleep): an attempt that waits its one duration input out, with
no process and no thread.

A `core-sleep` task has exactly one input, typed duration, and no outputs. The attempt succeeds once its
duration has passed since the plugin first handled it; until then it is RUNNING, and its execution is looked at
again when the duration is up (the engine's timer, nothing per attempt). The start is kept in the
attempt's state, so that a restart of the server resumes the wait where it was instead of starting it again.
A bad interface or input fails the attempt with BadTaskSpecification, as in Flyte.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from flyteidl.core import types_pb2

from flytelite.idl import error_codes as E
from flytelite.idl.error_kinds import USER
from flytelite.plugins.machinery.core import (
    Plugin,
    PluginPhase,
    PluginPhaseInfo,
    PluginState,
    TaskExecutionContext,
)

TASK_TYPE = "core-sleep"


class BadSleep(ValueError):
    pass


@dataclass
class SleepState(PluginState):
    started: str = ""  # ISO time of the attempt's first look
    seconds: float = 0.0  # the duration, read from the inputs at the first look


def duration_of(tctx: TaskExecutionContext) -> float:
    """The attempt's duration in seconds; raises BadSleep when the interface or the input is not one duration."""
    interface = tctx.task.interface
    variables = interface.inputs.variables
    if len(variables) != 1:
        raise BadSleep(f"task type {TASK_TYPE!r} needs exactly one input, of type duration; task "
                       f"{tctx.task.id.name} has {len(variables)}")
    if interface.outputs.variables:
        raise BadSleep(f"task type {TASK_TYPE!r} has no outputs; task {tctx.task.id.name} declares "
                       f"{', '.join(sorted(interface.outputs.variables))}")
    (name, variable), = variables.items()
    if variable.type.simple != types_pb2.DURATION:
        raise BadSleep(f"input {name!r} of task {tctx.task.id.name} must be typed as duration (datetime.timedelta)")
    literal = tctx.inputs.literals.get(name)
    if literal is None or not literal.scalar.primitive.HasField("duration"):
        raise BadSleep(f"input {name!r} of task {tctx.task.id.name} has no duration value")
    seconds = literal.scalar.primitive.duration.ToTimedelta().total_seconds()
    if seconds < 0:
        raise BadSleep(f"input {name!r} of task {tctx.task.id.name} is negative ({seconds} s)")
    return seconds


class SleepPlugin(Plugin):
    id = "core-sleep"
    task_types = (TASK_TYPE,)

    def handle(self, tctx: TaskExecutionContext) -> PluginPhaseInfo:
        now = tctx.ctx.clock.now()
        st = SleepState.load(tctx.state)
        if not st.started:
            try:
                st.seconds = duration_of(tctx)
            except BadSleep as e:
                return PluginPhaseInfo.failure(E.BAD_TASK_SPECIFICATION, str(e), kind=USER, retryable=False)
            if st.seconds == 0:
                return PluginPhaseInfo(PluginPhase.SUCCESS)
            st.started = now.isoformat()
            st.store(tctx.state)
        left = st.seconds - (now - datetime.fromisoformat(st.started)).total_seconds()
        if left <= 0:
            return PluginPhaseInfo(PluginPhase.SUCCESS)
        return PluginPhaseInfo(PluginPhase.RUNNING, reason=f"sleeping {st.seconds:g} s", poll_after=left)
