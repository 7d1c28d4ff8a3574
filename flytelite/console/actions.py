"""The console's two form posts that need typed conversion: launch with inputs, and set a signal's value.

Everything else the pages do (terminate, relaunch, recover, approve, reject,
activate) goes straight to the REST API. These two take the text typed in a
form, turn it into Literals by the expected types (console.forms), and call the
same servicer methods the gRPC API runs, so the validator's messages reach the
user unchanged. Responses are JSON: `{"id": ..., "url": ...}` or `{"error": ...}`.
"""

from __future__ import annotations

import json
from typing import Any

from flyteidl.admin import common_pb2, execution_pb2, signal_pb2
from flyteidl.core import identifier_pb2 as idpb
from flyteidl.core import interface_pb2
from flyteidl.core import literals_pb2 as L
from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import JSONResponse, Response

from flytelite.auth.http import IDENTITY, REFUSED
from flytelite.auth.roles import Authorizer, rpc_permission, serve_as
from flytelite.console.forms import literal_from_text
from flytelite.console.launch_form import OPTIONS
from flytelite.console.layout import execution_url
from flytelite.console.rest import HttpAudit, code_name, error_response
from flytelite.errors import InvalidArgument, NotFound, Unauthenticated

KINDS = {"launch_plan": idpb.LAUNCH_PLAN, "task": idpb.TASK}


def expected_inputs(admin, ident: idpb.Identifier) -> interface_pb2.ParameterMap:
    """What launching `ident` (a launch plan, or a task launched on its own) asks for."""
    if ident.resource_type == idpb.TASK:
        task = admin.GetTask(common_pb2.ObjectGetRequest(id=ident), None)
        params = interface_pb2.ParameterMap()
        for name, var in task.closure.compiled_task.template.interface.inputs.variables.items():
            params.parameters[name].var.CopyFrom(var)
            params.parameters[name].required = True
        return params
    return admin.GetLaunchPlan(common_pb2.ObjectGetRequest(id=ident), None).closure.expected_inputs


def launch(admin, form: dict[str, Any]) -> dict[str, Any]:
    """Start an execution from the launch form; InvalidArgument names the input that is wrong."""
    kind = form.get("kind", "launch_plan")
    if not isinstance(kind, str) or kind not in KINDS:
        raise InvalidArgument(f"cannot launch a {kind!r}; launch a launch_plan or a task")
    ident = idpb.Identifier(resource_type=KINDS[kind], project=str(form.get("project", "")),
                            domain=str(form.get("domain", "")), name=str(form.get("name", "")),
                            version=str(form.get("version", "")))
    texts = form.get("inputs") or {}
    if not isinstance(texts, dict):
        raise InvalidArgument(f"inputs must map input names to their text, got {texts!r}")
    params = expected_inputs(admin, ident).parameters
    inputs = L.LiteralMap()
    for name, value in texts.items():
        text = "" if value is None else str(value)
        if name not in params:
            raise InvalidArgument(f"{ident.name} has no input named {name!r}")
        # An empty field leaves the input to the launch plan's default (or reports it missing).
        if text == "" and params[name].var.type.WhichOneof("type") != "union_type":
            continue
        inputs.literals[name].CopyFrom(literal_from_text(text, params[name].var.type, name))
    metadata = execution_pb2.ExecutionMetadata(mode=execution_pb2.ExecutionMetadata.MANUAL, principal="console")
    source = form.get("relaunch_of")
    if source:
        # As FlyteAdmin's RelaunchExecution marks a relaunch: the new execution names the one it repeats.
        reference = idpb.WorkflowExecutionIdentifier(project=ident.project, domain=ident.domain, name=str(source))
        admin.GetExecution(execution_pb2.WorkflowExecutionGetRequest(id=reference), None)  # NotFound if it is not
        metadata.mode = execution_pb2.ExecutionMetadata.RELAUNCH
        metadata.reference_execution.CopyFrom(reference)
    spec = execution_pb2.ExecutionSpec(launch_plan=ident, metadata=metadata)
    _apply_options(spec, form.get("options") or {})
    created = admin.CreateExecution(execution_pb2.ExecutionCreateRequest(
        project=ident.project, domain=ident.domain, name=str(form.get("execution_name", "")), spec=spec,
        inputs=inputs), None)
    ex = created.id
    return {"id": {"project": ex.project, "domain": ex.domain, "name": ex.name},
            "url": execution_url(ex.project, ex.domain, ex.name)}


def _apply_options(spec: execution_pb2.ExecutionSpec, options: object) -> None:
    """The launch form's advanced options (texts as typed) on the execution's spec."""
    if not isinstance(options, dict):
        raise InvalidArgument(f"options must map option names to their text, got {options!r}")
    unknown = sorted(set(options) - {key for key, _label, _hint in OPTIONS})
    if unknown:
        raise InvalidArgument(f"unknown launch options {unknown}; the form has {[key for key, *_ in OPTIONS]}")
    for key, target in (("labels", spec.labels.values), ("annotations", spec.annotations.values)):
        target.update(_pairs(key, str(options.get(key) or "")))
    parallelism = str(options.get("max_parallelism") or "").strip()
    if parallelism:
        if not parallelism.isdigit():
            raise InvalidArgument(f"max parallelism must be a whole number of at least 0, got {parallelism!r}")
        spec.max_parallelism = int(parallelism)
    prefix = str(options.get("raw_output_prefix") or "").strip()
    if prefix:
        spec.raw_output_data_config.output_location_prefix = prefix
    spec.overwrite_cache = str(options.get("overwrite_cache", "")).lower() == "true"


def pairs_text(pairs) -> str:
    """A mapping as the launch form's `key=value, key=value` (what _pairs reads back)."""
    return ", ".join(f"{k}={v}" for k, v in sorted(pairs.items()))


def _pairs(what: str, text: str) -> dict[str, str]:
    """`key=value, key=value` as a dict."""
    pairs = {}
    for item in (part.strip() for part in text.split(",")):
        if not item:
            continue
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise InvalidArgument(f"{what} must be key=value pairs separated by commas, got {item!r}")
        pairs[key.strip()] = value.strip()
    return pairs


def set_signal_value(signals, signal_type, form: dict[str, Any]) -> dict[str, Any]:
    """Give a gate's signal the value typed in its form (converted by the signal's type)."""
    exec_id = idpb.WorkflowExecutionIdentifier(project=str(form.get("project", "")),
                                               domain=str(form.get("domain", "")), name=str(form.get("execution", "")))
    signal_id = str(form.get("signal_id", ""))
    lt = signal_type(exec_id, signal_id)
    value = literal_from_text(str(form.get("value", "")), lt, signal_id)
    signals.SetSignal(signal_pb2.SignalSetRequest(
        id=idpb.SignalIdentifier(signal_id=signal_id, execution_id=exec_id), value=value), None)
    return {"ok": True}


def signal_type_reader(signals):
    """Look a signal's type up through ListSignals (the gate created the signal with its type)."""
    def read(exec_id: idpb.WorkflowExecutionIdentifier, signal_id: str):
        listed = signals.ListSignals(signal_pb2.SignalListRequest(workflow_execution_id=exec_id, limit=1000), None)
        for s in listed.signals:
            if s.id.signal_id == signal_id:
                return s.type
        raise NotFound(f"execution {exec_id.name} has no signal {signal_id!r} (yet); a gate creates its signal "
                       f"when it starts running")
    return read


def json_action(what: str, action, rpc: str, audit: HttpAudit | None = None, authorizer: Authorizer | None = None):
    """A POST endpoint that runs `action(form)` in a worker thread and answers JSON; the `rpc` it makes is
    recorded with `audit`, and checked against the caller's roles with `authorizer`."""
    async def endpoint(request: Request) -> Response:
        form: object = None
        try:
            form = json.loads(await request.body() or b"{}")
            if not isinstance(form, dict):
                raise InvalidArgument("the form must be a JSON object")
            if request.scope.get(REFUSED) is not None:
                raise Unauthenticated(request.scope[REFUSED])
            if authorizer is None:
                result = await run_in_threadpool(action, form)
            else:
                result = await run_in_threadpool(serve_as, authorizer, request.scope.get(IDENTITY),
                                                 rpc_permission(rpc),
                                                 _named(form)[:2], lambda: action(form))
        except (json.JSONDecodeError, UnicodeDecodeError, RecursionError) as exc:
            return error_response(InvalidArgument(f"the form is not JSON in UTF-8 (nested at most a few hundred "
                                                  f"levels): {type(exc).__name__}: {exc}"), what)
        except Exception as exc:  # noqa: BLE001 - the edge: every failure becomes a JSON error the page shows
            if audit is not None:
                await run_in_threadpool(audit, request, rpc, _named(form), code_name(exc), str(exc))
            return error_response(exc, what)
        if audit is not None:
            await run_in_threadpool(audit, request, rpc, _named(form), "OK", "")
        return JSONResponse(result)
    return endpoint


def _named(form: object) -> tuple[str, str, str]:
    """What a launch or signal form names, as the audit trail keeps it (audit.describe)."""
    if not isinstance(form, dict):
        return "", "", ""
    resource = ":".join(str(form[k]) for k in ("name", "version", "execution", "signal_id") if form.get(k))
    return str(form.get("project", "")), str(form.get("domain", "")), resource
