"""Launch plan and execution notifications reach a real SMTP server (aiosmtpd), as FlyteAdmin's SMTP emailer
sends them; an SMTP server that is down at first gets its mail once it is up, across a server restart."""

from __future__ import annotations

import contextlib
import uuid
from datetime import timedelta

import pytest
from flyteidl.admin import common_pb2, execution_pb2
from flyteidl.core import literals_pb2
from flytekit import WorkflowExecutionPhase
from flytekit.clients.raw import RawSynchronousFlyteClient
from flytekit.tools.translator import Options

from flytelite.testing import free_port, make_server
from tests.e2e.flyte_cli import copy_workflows, pyflyte, remote_for, wait_for
from tests.notifications.mailsink import MailSink

pytestmark = pytest.mark.e2e


def _config(smtp_port: int) -> str:
    return (f"notifications:\n  smtp_host: 127.0.0.1\n  smtp_port: {smtp_port}\n  sender: flyte@example.org\n"
            f"  retry_seconds: 0.2\n  max_retry_seconds: 0.5\n  poll_seconds: 0.2\n")


def _register(server, tmp_path, version: str):
    folder = copy_workflows(tmp_path / "wf", "notify_flows.py")
    pyflyte(server, "register", "--project", "flytesnacks", "--domain", "development", "--version", version,
            "notify_flows.py", cwd=folder)
    return remote_for(server).fetch_launch_plan(name="notify_lp", version=version)


POLL = timedelta(milliseconds=200)


def _run(remote, lp, inputs, options=None):
    # FlyteRemote's own wait polls every 30 s.
    return remote.wait(remote.execute(lp, inputs=inputs, options=options), poll_interval=POLL, sync_nodes=False)


def _execute_with_own_notifications(remote, lp, template: str):
    own = common_pb2.Notification(phases=[WorkflowExecutionPhase.SUCCEEDED], email=common_pb2.EmailNotification(
        recipients_email=["me@example.com"], template=template))
    spec = execution_pb2.ExecutionSpec(launch_plan=lp.id.to_flyte_idl(),
                                       notifications=execution_pb2.NotificationList(notifications=[own]))
    request = execution_pb2.ExecutionCreateRequest(
        project="flytesnacks", domain="development", spec=spec,
        inputs=literals_pb2.LiteralMap(literals={"x": literals_pb2.Literal(scalar=literals_pb2.Scalar(
            primitive=literals_pb2.Primitive(integer=1)))}))
    created = RawSynchronousFlyteClient.create_execution(remote.client, request)
    return remote.wait(remote.fetch_execution(name=created.id.name), poll_interval=POLL, sync_nodes=False)


@pytest.fixture
def mailsink():
    sink = MailSink(free_port())
    sink.start()
    yield sink
    sink.stop()


@contextlib.contextmanager
def _notifying_server(tmp_path, smtp_port: int):
    """A server sending to `smtp_port`, a FlyteRemote on it and the registered notify_lp."""
    server = make_server(tmp_path, _config(smtp_port))
    server.start()
    try:
        yield server, remote_for(server), _register(server, tmp_path, uuid.uuid4().hex[:8])
    finally:
        if server.proc is not None:
            server.stop()


def test_launch_plan_and_execution_notifications(tmp_path, mailsink):
    with _notifying_server(tmp_path, mailsink.port) as (_server, remote, lp):
        ok = _run(remote, lp, inputs={"x": 3})
        [mail] = mailsink.wait_for(1)
        assert mail.rcpt_tos == ["team@example.com"] and mail.mail_from == "flyte@example.org"
        assert mail.subject == f'Notice: Execution "{ok.id.name}" has succeeded in "development".'
        assert f"/console/projects/flytesnacks/domains/development/executions/{ok.id.name}" in mail.body
        assert mail.message.get_content_type() == "text/html"

        bad = _run(remote, lp, inputs={"x": -1})
        assert bad.closure.phase == WorkflowExecutionPhase.FAILED
        mails = mailsink.wait_for(3)[1:]
        assert sorted(m.rcpt_tos[0] for m in mails) == ["alerts@example.slack.com", "oncall@example.pagerduty.com"]
        for m in mails:
            assert m.subject == f'Notice: Execution "{bad.id.name}" has failed in "development".'
            assert "x must not be negative, got -1" in m.body and "The execution failed with error: [" in m.body

        # Disabling all sends nothing: had it, its mail would come before the next execution's.
        _run(remote, lp, inputs={"x": 2}, options=Options(disable_notifications=True))
        # The execution's own list replaces the launch plan's, with its own body template. (flytekit 1.16's
        # Options(notifications=...) never reaches the wire: its ExecutionSpec sets disable_all after
        # notifications, the same proto oneof. The request goes through flytekit's raw client instead.)
        mine = _execute_with_own_notifications(remote, lp, "done: {{ name }} of {{ launch_plan.name }}")
        [m] = mailsink.wait_for(4)[3:]
        assert m.rcpt_tos == ["me@example.com"] and mine.id.name in m.subject
        assert m.body.strip() == f"done: {mine.id.name} of notify_lp"
        assert len(mailsink.received()) == 4


def test_smtp_down_then_up_across_a_restart(tmp_path):
    sink = MailSink(free_port())  # not listening yet
    try:
        with _notifying_server(tmp_path, sink.port) as (server, remote, lp):
            execution = _run(remote, lp, inputs={"x": 5})
            assert execution.closure.phase == WorkflowExecutionPhase.SUCCEEDED
            wait_for(lambda: "(attempt 2)" in server.log_text(), "two failed delivery attempts in the server log")
            assert f"e-mail of execution flytesnacks/development/{execution.id.name}" in server.log_text()
            server.stop()
            sink.start()
            server.start()
            [mail] = sink.wait_for(1)
            assert execution.id.name in mail.subject and mail.rcpt_tos == ["team@example.com"]
            # Sent once: a later execution's mail arrives and it is the only other one.
            other = _run(remote, lp, inputs={"x": 6})
            mails = sink.wait_for(2)
            assert other.id.name in mails[1].subject and len(sink.received()) == 2
    finally:
        sink.stop()
