"""Turning an execution's terminal phase into outbox mails (FlyteAdmin's ExecutionManager.publishNotifications,
called from CreateWorkflowEvent on terminal phases). Runs inside the event's transaction; never sends."""

from __future__ import annotations

import logging

from flyteidl.admin import execution_pb2
from flyteidl.event import event_pb2
from sqlalchemy.orm import Session

from flytelite.context import Context
from flytelite.notifications import outbox
from flytelite.notifications.email import emails_for_phase, template_values

log = logging.getLogger(__name__)


def publish_notifications(ctx: Context, session: Session, spec_pb: bytes,
                          closure: execution_pb2.ExecutionClosure,
                          event: event_pb2.WorkflowExecutionEvent) -> None:
    cfg = ctx.config.notifications
    spec = execution_pb2.ExecutionSpec.FromString(spec_pb)
    exec_id = event.execution_id
    base = ctx.public_url or ctx.config.public_url
    console_url = (f"{base}/console/projects/{exec_id.project}/domains/{exec_id.domain}/executions/{exec_id.name}"
                   if base else "")
    values = template_values(exec_id, event.phase, event.error if event.HasField("error") else None,
                             closure.workflow_id, spec.launch_plan, console_url)
    messages = emails_for_phase(cfg, closure.notifications, event.phase, values)
    if not messages:
        return
    if not cfg.enabled:
        log.info("execution %s/%s/%s asks for %d notification e-mail(s) on %s, but notifications.smtp_host is not "
                 "set: none is sent", exec_id.project, exec_id.domain, exec_id.name, len(messages), values["phase"])
        return
    outbox.enqueue(session, exec_id.project, exec_id.domain, exec_id.name, event.phase, messages, ctx.clock.now())
