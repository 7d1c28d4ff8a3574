"""Template variables in a task's container command and args (flyteplugins' template.Render), pure.

Case-insensitive, `{{.X}}` or `{{$X}}`, spaces allowed inside the braces: Input, InputPrefix,
OutputPrefix, RawOutputDataPrefix, CheckpointOutputPrefix, PrevCheckpointPrefix (empty on the
first attempt), PerRetryUniqueKey, TaskTemplatePath, Namespace and Inputs.<name>, and those a kind of task
adds (a Flyte 2 action's runName, actionName and runStartTime). rendered_command() fills them in for one
attempt, for every plugin that runs a task's command.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import cache
from typing import TYPE_CHECKING

import msgpack
from flyteidl.core import literals_pb2

if TYPE_CHECKING:
    from flytelite.plugins.machinery.core import TaskExecutionContext


@cache
def _var(name: str) -> re.Pattern:
    return re.compile(r"\{\{\s*[.$]" + name + r"\s*\}\}", re.IGNORECASE)


_INPUT = _var("Input")
_INPUT_PREFIX = _var("InputPrefix")
_OUTPUT_PREFIX = _var("OutputPrefix")
_RAW_OUTPUT = _var("RawOutputDataPrefix")
_PREV_CHECKPOINT = _var("PrevCheckpointPrefix")
_CHECKPOINT = _var("CheckpointOutputPrefix")
_UNIQUE_KEY = _var("PerRetryUniqueKey")
_TASK_TEMPLATE = _var("TaskTemplatePath")
_NAMESPACE = _var("Namespace")
_INPUT_VAR = re.compile(r"\{\{\s*[.$]Inputs\.([^}\s]+)\s*\}\}", re.IGNORECASE)


class TemplateError(ValueError):
    pass


@dataclass
class TemplateParams:
    input_uri: str
    input_prefix: str
    output_prefix: str
    raw_output_prefix: str
    checkpoint_prefix: str
    prev_checkpoint_prefix: str
    unique_key: str
    namespace: str
    # Called only when an argument mentions them: writing the template or reading inputs costs I/O.
    task_template_path: Callable[[], str] | None = None
    inputs: Callable[[], literals_pb2.LiteralMap] | None = None
    # More variables, by name.
    extra: dict[str, str] = field(default_factory=dict)


def render(args: list[str], params: TemplateParams) -> list[str]:
    return [render_one(a, params) for a in args]


def render_one(text: str, p: TemplateParams) -> str:
    if "{{" not in text:
        return text

    def sub(pattern: re.Pattern, value: str, s: str) -> str:
        return pattern.sub(lambda _m: value, s)

    s = sub(_INPUT, p.input_uri, text)
    s = sub(_OUTPUT_PREFIX, p.output_prefix, s)
    s = sub(_INPUT_PREFIX, p.input_prefix, s)
    s = sub(_RAW_OUTPUT, p.raw_output_prefix, s)
    s = sub(_PREV_CHECKPOINT, p.prev_checkpoint_prefix, s)
    s = sub(_CHECKPOINT, p.checkpoint_prefix, s)
    s = sub(_UNIQUE_KEY, p.unique_key, s)
    if _TASK_TEMPLATE.search(s):
        if p.task_template_path is None:
            raise TemplateError("{{.TaskTemplatePath}} is used but no task template path is available")
        s = sub(_TASK_TEMPLATE, p.task_template_path(), s)
    s = sub(_NAMESPACE, p.namespace, s)
    for name, value in p.extra.items():
        s = sub(_var(re.escape(name)), value, s)
    if _INPUT_VAR.search(s):
        literals = p.inputs().literals if p.inputs is not None else {}

        def input_value(m: re.Match) -> str:
            name = m.group(1)
            if name not in literals:
                raise TemplateError(f"{m.group(0)} names input {name!r}, which the task was not given")
            return literal_to_text(literals[name])

        s = _INPUT_VAR.sub(input_value, s)
    return s


def literal_to_text(lit: literals_pb2.Literal) -> str:
    """How an input value appears in a command line (as flyteplugins serializes it)."""
    if lit.HasField("collection"):
        return "[" + ",".join(literal_to_text(x) for x in lit.collection.literals) + "]"
    if not lit.HasField("scalar"):
        raise TemplateError(f"cannot put a {lit.WhichOneof('value')} value in a command line")
    sc = lit.scalar
    kind = sc.WhichOneof("value")
    if kind == "primitive":
        return _primitive_text(sc.primitive)
    if kind == "blob":
        return sc.blob.uri
    if kind == "schema":
        return sc.schema.uri
    if kind == "binary" and sc.binary.tag == "msgpack":
        return str(msgpack.unpackb(sc.binary.value, strict_map_key=False))
    raise TemplateError(f"cannot put a {kind} value in a command line")


def _primitive_text(p: literals_pb2.Primitive) -> str:
    kind = p.WhichOneof("value")
    if kind == "integer":
        return str(p.integer)
    if kind == "boolean":
        return "true" if p.boolean else "false"
    if kind == "float_value":
        f = p.float_value
        return str(int(f)) if f.is_integer() and abs(f) < 1e21 else repr(f)
    if kind == "string_value":
        return p.string_value
    if kind == "datetime":
        return p.datetime.ToJsonString()
    if kind == "duration":
        return p.duration.ToJsonString()
    raise TemplateError(f"unexpected primitive {kind!r}")


def rendered_command(tctx: TaskExecutionContext, words: list[str] | None = None) -> list[str]:
    """The container's command and args (or `words`) with Flyte's {{.input}}-style templates filled in for
    this attempt."""
    container = tctx.container
    if words is None:
        words = list(container.command) + list(container.args)
    params = TemplateParams(
        input_uri=tctx.input_uri, input_prefix=tctx.input_prefix, output_prefix=tctx.output_prefix,
        raw_output_prefix=tctx.raw_output_prefix, checkpoint_prefix=tctx.checkpoint_prefix,
        prev_checkpoint_prefix=tctx.prev_checkpoint_prefix, unique_key=tctx.unique_key,
        namespace=tctx.namespace, task_template_path=tctx.task_template_path, inputs=lambda: tctx.inputs,
        extra=tctx.template_vars,
    )
    return render(words, params)
