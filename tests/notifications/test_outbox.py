"""The outbox with a real SMTP server: two replicas' senders on one database send each mail once; a refusal
for good ends a mail, an unreachable server keeps it for later."""

from __future__ import annotations

import threading

from flyteidl.admin import notification_pb2

from flytelite.config import Config, NotificationsConfig
from flytelite.notifications import outbox
from flytelite.notifications.processor import NotificationProcessor
from flytelite.server.app import build_context
from flytelite.testing import database_url_for, free_port
from tests.notifications.mailsink import REFUSED_DOMAIN, MailSink


def _context(tmp_path, port: int):
    cfg = Config(home=tmp_path / "home", database_url=database_url_for(tmp_path / "home"),
                 notifications=NotificationsConfig(smtp_host="127.0.0.1", smtp_port=port, retry_seconds=0.05))
    return build_context(cfg)


def _enqueue(ctx, count: int, to: str = "a@example.com") -> None:
    with ctx.db.session() as s:
        outbox.enqueue(s, "p", "development", "e", 4, [
            notification_pb2.EmailMessage(recipients_email=[to], sender_email="f@example.com",
                                          subject_line=f"mail {i}", body="b") for i in range(count)],
            ctx.clock.now())


def test_two_senders_send_each_mail_once(tmp_path):
    sink = MailSink(free_port())
    sink.start()
    try:
        ctx = _context(tmp_path, sink.port)
        _enqueue(ctx, 40)
        senders = [NotificationProcessor(ctx, owner) for owner in ("replica-a", "replica-b")]
        start = threading.Barrier(2)

        def drain(sender):
            start.wait()
            while outbox.pending_count(ctx):
                sender.send_due()

        threads = [threading.Thread(target=drain, args=(s,)) for s in senders]
        for t in threads:
            t.start()
        for t in threads:
            t.join(120)
        subjects = sorted(m.subject for m in sink.received())
        assert subjects == sorted(f"mail {i}" for i in range(40))
    finally:
        sink.stop()


def test_permanent_refusal_ends_and_outage_keeps(tmp_path):
    sink = MailSink(free_port())
    ctx = _context(tmp_path, sink.port)
    _enqueue(ctx, 1)
    sender = NotificationProcessor(ctx, "r")
    assert sender.send_due() == 0  # nobody listens: kept for later
    assert outbox.pending_count(ctx) == 1
    sink.start()
    try:
        _enqueue(ctx, 1, to="nobody" + REFUSED_DOMAIN)
        sent = 0
        while outbox.pending_count(ctx):
            sent += sender.send_due()
        assert sent == 1 and [m.subject for m in sink.received()] == ["mail 0"]
    finally:
        sink.stop()
