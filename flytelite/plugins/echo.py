"""The echo task plugin (flyteplugins' testing/echo.go): an attempt's outputs are its inputs, no process.

flytekit's `Echo` task (a no-op, e.g. as a branch arm) has type "echo" and an interface whose outputs
mirror its inputs. Each input goes to the output of the same name; as in Flyte, an interface with one
input and one output of different names maps that one to the other. Different counts, or several
variables whose names do not match, fail the attempt saying so.
"""

from __future__ import annotations

from flyteidl.core import literals_pb2

from flytelite.idl import error_codes as E
from flytelite.idl.error_kinds import USER
from flytelite.plugins.machinery.core import Plugin, PluginPhase, PluginPhaseInfo, TaskExecutionContext


def output_names(inputs: list[str], outputs: list[str]) -> dict[str, str]:
    """Input variable -> output variable; raises ValueError when the interface cannot echo."""
    if len(inputs) != len(outputs):
        raise ValueError(f"the number of input ({len(inputs)}) and output ({len(outputs)}) variables does not match")
    if set(inputs) == set(outputs):
        return {name: name for name in inputs}
    if len(inputs) == 1:
        return {inputs[0]: outputs[0]}
    raise ValueError(f"inputs {sorted(inputs)} and outputs {sorted(outputs)} must have the same names")


class EchoPlugin(Plugin):
    id = "echo"
    task_types = ("echo",)

    def handle(self, tctx: TaskExecutionContext) -> PluginPhaseInfo:
        interface = tctx.task.interface
        try:
            mapping = output_names(list(interface.inputs.variables), list(interface.outputs.variables))
        except ValueError as e:
            return PluginPhaseInfo.failure(E.ECHO_INTERFACE_MISMATCH, f"echo task {tctx.task.id.name}: {e}",
                                           kind=USER, retryable=False)
        if mapping:
            inputs = tctx.inputs
            outputs = literals_pb2.LiteralMap()
            for src, dst in mapping.items():
                if src in inputs.literals:
                    outputs.literals[dst].CopyFrom(inputs.literals[src])
            tctx.ctx.blobs.write_proto(f"{tctx.output_prefix}/outputs.pb", outputs)
        return PluginPhaseInfo(PluginPhase.SUCCESS)
