"""The e-mails an execution's phase change asks for (FlyteAdmin's `publishNotifications` and
`ToEmailMessageFromWorkflowExecutionEvent`, notifications/email.go). Pure: no I/O.

Email, Slack and PagerDuty notifications all become an e-mail to their recipients, as in Flyte. A notification
names the phases it fires on; the subject and body are the config's templates (or the notification's own
body template), with FlyteAdmin's variables substituted, written `{{ name }}` or `{{name}}`.
"""

from __future__ import annotations

from collections.abc import Iterable

from flyteidl.admin import common_pb2, execution_pb2, notification_pb2
from flyteidl.core import execution_pb2 as core_execution_pb2

from flytelite.config import NotificationsConfig


def recipients(notification: common_pb2.Notification) -> list[str]:
    """Who an Email, Slack or PagerDuty notification writes to (each is an e-mail underneath)."""
    kind = notification.WhichOneof("type")
    if kind is None:
        return []
    return list(getattr(notification, kind).recipients_email)


def execution_notifications(lp_notifications: Iterable[common_pb2.Notification],
                            spec: execution_pb2.ExecutionSpec) -> list[common_pb2.Notification]:
    """What an execution notifies on: the request's own list, else none if it disables all, else the launch
    plan's (FlyteAdmin's CreateExecution)."""
    if spec.HasField("notifications") and spec.notifications.notifications:
        return list(spec.notifications.notifications)
    if spec.disable_all:
        return []
    return list(lp_notifications)


def template_values(execution_id, phase: int, error: core_execution_pb2.ExecutionError | None,
                    workflow_id, launch_plan_id, console_url: str) -> dict[str, str]:
    """FlyteAdmin's template variables (plus flytelite's `console_url`, the execution's page)."""
    values = {
        "project": execution_id.project, "domain": execution_id.domain, "name": execution_id.name,
        "phase": core_execution_pb2.WorkflowExecution.Phase.Name(phase).lower(),
        "error": f" The execution failed with error: [{error.message}]." if error is not None else "",
        "console_url": console_url,
    }
    for prefix, ident in (("workflow", workflow_id), ("launch_plan", launch_plan_id)):
        for part in ("project", "domain", "name", "version"):
            values[f"{prefix}.{part}"] = getattr(ident, part)
    return values


def substitute(template: str, values: dict[str, str]) -> str:
    for key, value in values.items():
        template = template.replace("{{ " + key + " }}", value).replace("{{" + key + "}}", value)
    return template


def emails_for_phase(config: NotificationsConfig, notifications: Iterable[common_pb2.Notification], phase: int,
                     values: dict[str, str]) -> list[notification_pb2.EmailMessage]:
    """One EmailMessage per notification that names `phase` and has recipients."""
    messages = []
    for notification in notifications:
        if phase not in notification.phases:
            continue
        to = recipients(notification)
        if not to:
            continue
        body = notification.email.template if notification.HasField("email") and notification.email.template \
            else config.body
        messages.append(notification_pb2.EmailMessage(
            recipients_email=to, sender_email=config.sender, subject_line=substitute(config.subject, values),
            body=substitute(body, values)))
    return messages
