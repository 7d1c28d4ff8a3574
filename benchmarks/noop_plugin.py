"""The no-op task plugin, for benchmarks only: every attempt succeeds at once with zero values.

It measures what flytelite itself costs (scheduling, persistence, events) with no task process at
all. Each output gets the zero value of its type (0, 0.0, "", False, an empty list or map, a
union's first variant, an enum's first value); an output it cannot make up (a file, a dataframe)
fails the attempt saying so. It never runs user code. Only the benchmarks' server uses it
(benchmarks/noop_server.py); flytelite itself has no setting that does.
"""

from __future__ import annotations

from flyteidl.core import literals_pb2, types_pb2
from google.protobuf import struct_pb2

from flytelite.idl.error_kinds import USER
from flytelite.plugins.machinery.core import Plugin, PluginPhase, PluginPhaseInfo, TaskExecutionContext

# Every task type flytekit produces that runs a container or python code.
TASK_TYPES = ("python-task", "container", "raw-container", "sqlite", "eager_failure_handler_task", "sidecar", "pod")
_SIMPLE = types_pb2.SimpleType
# The error code of an attempt whose outputs the plugin cannot make up.
UNSUPPORTED_OUTPUT = "NoopPluginUnsupportedOutput"


class CannotMakeValue(ValueError):
    pass


def zero_literal(lt: types_pb2.LiteralType) -> literals_pb2.Literal:
    """The zero value of a literal type; raises CannotMakeValue for types with none (blobs, datasets)."""
    kind = lt.WhichOneof("type")
    if kind == "simple":
        return _zero_scalar(lt.simple)
    if kind == "collection_type":
        return literals_pb2.Literal(collection=literals_pb2.LiteralCollection())
    if kind == "map_value_type":
        return literals_pb2.Literal(map=literals_pb2.LiteralMap())
    if kind == "enum_type" and lt.enum_type.values:
        return literals_pb2.Literal(scalar=literals_pb2.Scalar(
            primitive=literals_pb2.Primitive(string_value=lt.enum_type.values[0])))
    if kind == "union_type" and lt.union_type.variants:
        variant = lt.union_type.variants[0]
        return literals_pb2.Literal(scalar=literals_pb2.Scalar(
            union=literals_pb2.Union(value=zero_literal(variant), type=variant)))
    raise CannotMakeValue(f"the no-op plugin cannot make up a value of type {kind or 'unset'}")


def _zero_scalar(simple: int) -> literals_pb2.Literal:
    zeros: dict[int, literals_pb2.Primitive] = {
        _SIMPLE.INTEGER: literals_pb2.Primitive(integer=0),
        _SIMPLE.FLOAT: literals_pb2.Primitive(float_value=0.0),
        _SIMPLE.STRING: literals_pb2.Primitive(string_value=""),
        _SIMPLE.BOOLEAN: literals_pb2.Primitive(boolean=False),
    }
    primitive = zeros.get(simple)
    if primitive is not None:
        return literals_pb2.Literal(scalar=literals_pb2.Scalar(primitive=primitive))
    if simple == _SIMPLE.NONE:
        return literals_pb2.Literal(scalar=literals_pb2.Scalar(none_type=literals_pb2.Void()))
    if simple == _SIMPLE.STRUCT:
        return literals_pb2.Literal(scalar=literals_pb2.Scalar(generic=struct_pb2.Struct()))
    if simple == _SIMPLE.DATETIME:
        return literals_pb2.Literal(scalar=literals_pb2.Scalar(primitive=literals_pb2.Primitive(
            datetime={"seconds": 0})))
    if simple == _SIMPLE.DURATION:
        return literals_pb2.Literal(scalar=literals_pb2.Scalar(primitive=literals_pb2.Primitive(
            duration={"seconds": 0})))
    raise CannotMakeValue(f"the no-op plugin cannot make up a value of simple type {_SIMPLE.Name(simple)}")


class NoopPlugin(Plugin):
    """Answers every attempt with SUCCESS and zero-valued outputs, without running anything."""

    id = "noop"
    task_types = TASK_TYPES

    def handle(self, tctx: TaskExecutionContext) -> PluginPhaseInfo:
        outputs = literals_pb2.LiteralMap()
        for name, var in tctx.task.interface.outputs.variables.items():
            try:
                outputs.literals[name].CopyFrom(zero_literal(var.type))
            except CannotMakeValue as e:
                return PluginPhaseInfo.failure(UNSUPPORTED_OUTPUT, f"output {name!r} of task "
                                               f"{tctx.task.id.name}: {e}", kind=USER, retryable=False)
        tctx.ctx.blobs.write_proto(f"{tctx.output_prefix}/outputs.pb", outputs)
        return PluginPhaseInfo(PluginPhase.SUCCESS)
