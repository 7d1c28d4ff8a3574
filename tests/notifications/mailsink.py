"""A real SMTP server for the tests (aiosmtpd's, in a thread) that keeps every mail it receives."""

from __future__ import annotations

import email
import email.policy
import threading
import time
from dataclasses import dataclass

from aiosmtpd.controller import Controller

# Recipients at this domain are refused for good (550), as a mail server refuses an unknown mailbox.
REFUSED_DOMAIN = "@refused.example"


@dataclass
class Mail:
    mail_from: str
    rcpt_tos: list[str]
    message: email.message.EmailMessage

    @property
    def subject(self) -> str:
        return str(self.message["Subject"])

    @property
    def body(self) -> str:
        return self.message.get_body().get_content()


class _Handler:
    def __init__(self, sink: MailSink):
        self.sink = sink

    async def handle_RCPT(self, server, session, envelope, address, rcpt_options):  # noqa: N802
        if address.endswith(REFUSED_DOMAIN):
            return "550 5.1.1 no such mailbox"
        envelope.rcpt_tos.append(address)
        return "250 OK"

    async def handle_DATA(self, server, session, envelope):  # noqa: N802 - aiosmtpd's hook name
        message = email.message_from_bytes(envelope.content, policy=email.policy.default)
        with self.sink.lock:
            self.sink.mails.append(Mail(envelope.mail_from, list(envelope.rcpt_tos), message))
        return "250 Message accepted for delivery"


class MailSink:
    """`start()` listens on 127.0.0.1:`port`; `wait_for(n)` returns once `n` mails arrived."""

    def __init__(self, port: int):
        self.port = port
        self.mails: list[Mail] = []
        self.lock = threading.Lock()
        self._controller: Controller | None = None

    def start(self) -> None:
        self._controller = Controller(_Handler(self), hostname="127.0.0.1", port=self.port)
        self._controller.start()

    def stop(self) -> None:
        if self._controller is not None:
            self._controller.stop()
            self._controller = None

    def received(self) -> list[Mail]:
        with self.lock:
            return list(self.mails)

    def wait_for(self, count: int, timeout: float = 120) -> list[Mail]:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            mails = self.received()
            if len(mails) >= count:
                return mails
            time.sleep(0.1)
        raise AssertionError(f"expected {count} mail(s) within {timeout}s, got {len(self.received())}: "
                             f"{[m.subject for m in self.received()]}")
