"""The sending loop (FlyteAdmin's notifications processor, which reads its queue and calls the emailer): every
`notifications.poll_seconds` it claims the due mails of the outbox and sends them over one SMTP session.

A failure is logged and the mail tried again later (notifications.retry_seconds doubling up to
max_retry_seconds); it never touches the execution, which ended before its mail was queued. Every replica that
runs the engine runs one; row claims (notifications/outbox.py) make sure each mail goes out from one of them.
"""

from __future__ import annotations

import asyncio
import logging

from flytelite.context import Context
from flytelite.notifications import outbox
from flytelite.notifications.smtp import DeliveryError, SmtpConnection

log = logging.getLogger(__name__)


class NotificationProcessor:
    def __init__(self, ctx: Context, owner: str):
        self.ctx, self.owner = ctx, owner
        self.config = ctx.config.notifications
        self._stopping = asyncio.Event()
        self._wake = asyncio.Event()

    def stop(self) -> None:
        self._stopping.set()
        self._wake.set()

    async def run(self) -> None:
        cfg = self.config
        log.info("sending notification e-mails through %s:%s from %s", cfg.smtp_host, cfg.smtp_port, cfg.sender)
        while not self._stopping.is_set():
            try:
                await asyncio.to_thread(self.send_due)
            except Exception:  # noqa: BLE001 - a database hiccup: the next round tries again
                log.exception("sending notification e-mails failed; trying again in %.1f s", cfg.poll_seconds)
            try:
                await asyncio.wait_for(self._wake.wait(), timeout=cfg.poll_seconds)
            except asyncio.TimeoutError:
                pass
            self._wake.clear()

    def send_due(self) -> int:
        """Claim and send what is due now; returns how many mails went out."""
        mails = outbox.claim_due(self.ctx, self.owner, self.ctx.clock.now())
        if not mails:
            return 0
        sent = 0
        try:
            with SmtpConnection(self.config) as smtp:
                for mail in mails:
                    try:
                        refused = smtp.send(mail.message)
                    except DeliveryError as exc:
                        self._failed(mail, exc)
                        continue
                    if refused:
                        log.warning("notification e-mail of execution %s was not accepted for %s",
                                    mail.execution, ", ".join(refused))
                    outbox.mark_sent(self.ctx, mail, self.owner, self.ctx.clock.now())
                    sent += 1
        except DeliveryError as exc:  # no session at all (only opening it raises here): every mail waits
            for mail in mails:
                self._failed(mail, exc)
        return sent

    def _failed(self, mail: outbox.PendingMail, exc: DeliveryError) -> None:
        next_at = outbox.mark_failed(self.ctx, mail, self.owner, self.ctx.clock.now(), str(exc), exc.permanent,
                                     self.config)
        if next_at is None:
            log.error("giving up the notification e-mail of execution %s to %s after %d attempt(s): %s",
                      mail.execution, ", ".join(mail.message.recipients_email), mail.attempts + 1, exc)
        else:
            log.warning("notification e-mail of execution %s to %s failed (attempt %d): %s; retrying at %s",
                        mail.execution, ", ".join(mail.message.recipients_email), mail.attempts + 1, exc,
                        next_at.isoformat(timespec="seconds"))
