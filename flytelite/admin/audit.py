"""The audit trail: every call that changes something, or tries to, with who made it, from where, what it named
and how it ended (denied calls too), stored in the database's `audit_events` and listed by `flytelite audit` and
the console's audit page.

Audited: registering tasks, workflows and launch plans, activating launch plans, creating, relaunching,
recovering, terminating and updating executions, setting signals (approving or rejecting a gate), projects, and
matchable attributes; over gRPC (AuditInterceptor), REST and the console's actions (`AuditLog.record` from their
endpoints). Reads are not audited; retention removes old events (flytelite/retention.py). A call's answer never
depends on its audit entry: a failed write is logged and the answer stands.
"""

from __future__ import annotations

import functools
import logging
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

import grpc
from google.protobuf import descriptor_pool, message_factory
from google.protobuf.message import DecodeError, Message
from sqlalchemy import select

from flytelite.context import Context
from flytelite.store.models import AuditEvent

log = logging.getLogger(__name__)

AUDITED = frozenset({
    "CreateTask", "CreateWorkflow", "CreateLaunchPlan", "UpdateLaunchPlan",
    "CreateExecution", "RelaunchExecution", "RecoverExecution", "UpdateExecution", "TerminateExecution",
    "RegisterProject", "UpdateProject", "UpdateNamedEntity",
    "UpdateProjectAttributes", "DeleteProjectAttributes", "UpdateProjectDomainAttributes",
    "DeleteProjectDomainAttributes", "UpdateWorkflowAttributes", "DeleteWorkflowAttributes",
    "SetSignal",
})
_PROJECT = "flyteidl.admin.Project"
_MESSAGE_LIMIT = 500


@dataclass(frozen=True)
class Caller:
    """Who made a call: the token's subject and client ("" when there was no valid token) and the address."""

    identity: str = ""
    client_id: str = ""
    address: str = ""


# A call's metadata (lower-case keys) -> the (subject, client id) its valid token speaks for, ("", "") without one.
Identify = Callable[[Mapping[str, str]], tuple[str, str]]


def describe(request: Message) -> tuple[str, str, str]:
    """(project, domain, resource) a request names: an entity's name and version, an execution's name, a
    workflow's attributes, a project's id; a signal's id after its execution's name."""
    project_msg = _project_message(request)
    if project_msg is not None:
        return project_msg.id, "", project_msg.name
    named = _first_with_project(request)
    if named is None:
        return "", "", ""
    parts = [getattr(named, f) for f in ("name", "workflow", "version") if isinstance(getattr(named, f, None), str)]
    signal = getattr(getattr(request, "id", None), "signal_id", "")
    return named.project, getattr(named, "domain", ""), ":".join(p for p in [*parts, signal] if p)


def describe_call(request: Message | None, response: Message | None) -> tuple[str, str, str]:
    """describe() of a call: what its response names when its request leaves the name to the server (a
    CreateExecution without a name, whose response carries the execution's id)."""
    named = describe(request) if request is not None else ("", "", "")
    if not named[2] and response is not None:
        answered = describe(response)
        if answered[2]:
            return answered
    return named


def _project_message(request: Message) -> Any:
    """The Project of RegisterProject (its `project` field) and UpdateProject (the request itself)."""
    if request.DESCRIPTOR.full_name == _PROJECT:
        return request
    inner = getattr(request, "project", None)
    return inner if isinstance(inner, Message) and inner.DESCRIPTOR.full_name == _PROJECT else None


def _first_with_project(message: Message) -> Any:
    """The request, or the first message inside it (breadth first), with a non-empty string `project`."""
    queue = [message]
    while queue:
        current = queue.pop(0)
        project = getattr(current, "project", None)
        if isinstance(project, str) and project:
            return current
        queue += [value for field, value in current.ListFields() if isinstance(value, Message)]
    return None


class AuditLog:
    def __init__(self, ctx: Context):
        self.ctx = ctx

    def record(self, action: str, named: tuple[str, str, str], who: Caller, outcome: str, message: str = "") -> None:
        """One event: `named` is the (project, domain, resource) the call named (see describe)."""
        project, domain, resource = named
        try:
            with self.ctx.db.session() as s:
                s.add(AuditEvent(at=self.ctx.clock.now(), identity=who.identity, client_id=who.client_id,
                                 address=who.address, action=action, project=project, domain=domain,
                                 resource=resource[:1024], outcome=outcome, message=message[:_MESSAGE_LIMIT]))
        except Exception:  # noqa: BLE001 - the call's own answer stands whatever happens to its entry
            log.exception("could not record %s (%s) in the audit trail", action, outcome)

    def events(self, limit: int = 200, since: timedelta | None = None, project: str = "") -> list[AuditEvent]:
        """The newest events first."""
        query = select(AuditEvent).order_by(AuditEvent.id.desc()).limit(limit)
        if since is not None:
            query = query.where(AuditEvent.at >= self.ctx.clock.now() - since)
        if project:
            query = query.where(AuditEvent.project == project)
        with self.ctx.db.session() as s:
            return list(s.scalars(query))


class AuditInterceptor(grpc.ServerInterceptor):
    """Records the audited calls over gRPC. Outside authentication, so calls it refuses are recorded too."""

    def __init__(self, audit: AuditLog, identify: Identify | None):
        self.audit, self.identify = audit, identify

    def intercept_service(self, continuation, handler_call_details):
        handler = continuation(handler_call_details)
        action = handler_call_details.method.rsplit("/", 1)[-1]
        if handler is None or handler.unary_unary is None or action not in AUDITED:
            return handler
        metadata = {k.lower(): v for k, v in (handler_call_details.invocation_metadata or ()) if isinstance(v, str)}
        behavior, audit, identify = handler.unary_unary, self.audit, self.identify
        request_type = _request_type(handler_call_details.method)

        def audited(request, context: grpc.ServicerContext):
            outcome, message, response = "OK", "", None
            try:
                response = behavior(request, context)
                return response
            except Exception as exc:
                outcome, message = "INTERNAL", str(exc)
                raise
            finally:
                code = context.code()  # type: ignore[attr-defined]  # grpc 1.38+, not in types-grpcio
                if code is not None and code != grpc.StatusCode.OK:
                    outcome = code.name
                    details = context.details() or ""  # type: ignore[attr-defined]
                    message = message or (details.decode(errors="replace") if isinstance(details, bytes) else details)
                subject, client_id = identify(metadata) if identify is not None else ("", "")
                who = Caller(subject, client_id, _address(context.peer()))
                audit.record(action, describe_call(_parsed(request, request_type), response), who, outcome, message)

        return handler._replace(unary_unary=audited)


@functools.cache
def _request_type(method: str) -> type[Message] | None:
    """The request message class of a gRPC method path (/flyteidl.service.AdminService/CreateExecution)."""
    try:
        found = descriptor_pool.Default().FindMethodByName(method.strip("/").replace("/", "."))
    except KeyError:
        return None
    return message_factory.GetMessageClass(found.input_type)


def _parsed(request: Message | bytes, request_type: type[Message] | None) -> Message | None:
    """A request that reaches the interceptor still serialized (the error boundary parses it inside), parsed;
    None for bytes that do not parse."""
    if not isinstance(request, bytes):
        return request
    if request_type is None:
        return None
    try:
        return request_type.FromString(request)
    except DecodeError:
        return None


def _address(peer: str) -> str:
    """The client's address of a gRPC peer string (ipv4:127.0.0.1:5432, ipv6:[::1]:5432)."""
    kind, _, rest = peer.partition(":")
    if kind in ("ipv4", "ipv6"):
        return rest.rsplit(":", 1)[0].strip("[]")
    return peer
