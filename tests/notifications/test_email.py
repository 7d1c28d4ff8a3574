"""Which notifications fire and what their e-mails say (FlyteAdmin's publishNotifications and email.go)."""

from __future__ import annotations

from flyteidl.admin import common_pb2, execution_pb2
from flyteidl.core import execution_pb2 as core
from flyteidl.core import identifier_pb2 as idpb

from flytelite.config import NotificationsConfig
from flytelite.notifications.email import (
    emails_for_phase,
    execution_notifications,
    substitute,
    template_values,
)

Phase = core.WorkflowExecution.Phase
EXEC = idpb.WorkflowExecutionIdentifier(project="p", domain="development", name="abc")
WF = idpb.Identifier(project="p", domain="development", name="wf", version="v1")
LP = idpb.Identifier(project="p", domain="development", name="lp", version="v2")


def _values(phase=Phase.FAILED, error=None):
    return template_values(EXEC, phase, error, WF, LP, "http://x/console/e")


def test_default_templates_fill_flyte_variables():
    cfg = NotificationsConfig(smtp_host="h")
    n = common_pb2.Notification(phases=[Phase.FAILED], email=common_pb2.EmailNotification(recipients_email=["a@x"]))
    error = core.ExecutionError(message="boom")
    [mail] = emails_for_phase(cfg, [n], Phase.FAILED, _values(error=error))
    assert mail.subject_line == 'Notice: Execution "abc" has failed in "development".'
    assert mail.body.startswith('Execution "abc" has failed in "development". View details at')
    assert "http://x/console/e" in mail.body and mail.body.endswith(" The execution failed with error: [boom].")
    assert list(mail.recipients_email) == ["a@x"] and mail.sender_email == cfg.sender


def test_every_variable_both_spellings():
    text = ("{{ project }}|{{domain}}|{{ name }}|{{ phase }}|{{ workflow.name }}|{{workflow.version}}|"
            "{{ launch_plan.name }}|{{launch_plan.version}}|{{ workflow.project }}|{{ launch_plan.domain }}")
    assert substitute(text, _values(Phase.SUCCEEDED)) == "p|development|abc|succeeded|wf|v1|lp|v2|p|development"


def test_phase_filter_and_kinds_and_own_template():
    cfg = NotificationsConfig(smtp_host="h")
    notes = [
        common_pb2.Notification(phases=[Phase.SUCCEEDED], email=common_pb2.EmailNotification(
            recipients_email=["e@x"], template="done {{ name }}")),
        common_pb2.Notification(phases=[Phase.FAILED, Phase.SUCCEEDED],
                                slack=common_pb2.SlackNotification(recipients_email=["s@x"])),
        common_pb2.Notification(phases=[Phase.ABORTED],
                                pager_duty=common_pb2.PagerDutyNotification(recipients_email=["pd@x"])),
    ]
    mails = emails_for_phase(cfg, notes, Phase.SUCCEEDED, _values(Phase.SUCCEEDED))
    assert [list(m.recipients_email) for m in mails] == [["e@x"], ["s@x"]]
    assert mails[0].body == "done abc"
    assert [list(m.recipients_email) for m in emails_for_phase(cfg, notes, Phase.ABORTED, _values())] == [["pd@x"]]
    assert emails_for_phase(cfg, notes, Phase.TIMED_OUT, _values()) == []


def test_execution_list_overrides_launch_plan_and_disable_all():
    lp_notes = [common_pb2.Notification(phases=[Phase.FAILED],
                                        email=common_pb2.EmailNotification(recipients_email=["lp@x"]))]
    own = common_pb2.Notification(phases=[Phase.SUCCEEDED], email=common_pb2.EmailNotification(recipients_email=["me@x"]))
    assert execution_notifications(lp_notes, execution_pb2.ExecutionSpec()) == lp_notes
    spec = execution_pb2.ExecutionSpec(notifications=execution_pb2.NotificationList(notifications=[own]))
    assert execution_notifications(lp_notes, spec) == [own]
    assert execution_notifications(lp_notes, execution_pb2.ExecutionSpec(disable_all=True)) == []


def test_config_section_and_its_checks(tmp_path):
    import pytest

    from flytelite.config import Config

    path = tmp_path / "flytelite.yaml"
    path.write_text("notifications:\n  smtp_host: mail.example.com\n  smtp_port: 587\n  starttls: always\n")
    cfg = Config.load(path).notifications
    assert cfg.enabled and cfg.smtp_port == 587 and cfg.starttls == "always"
    assert cfg.subject.startswith("Notice: Execution")
    assert not Config().notifications.enabled
    path.write_text("notifications:\n  starttls: sometimes\n")
    with pytest.raises(ValueError, match="notifications.starttls must be one of auto, always, never"):
        Config.load(path)
