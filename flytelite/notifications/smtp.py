"""Sending one e-mail over SMTP, as FlyteAdmin's SMTPEmailer does (implementations/smtp_emailer.go): EHLO,
STARTTLS when the server offers it, login when a username is configured, MAIL FROM the sender, RCPT TO each
recipient, and an HTML body. A connection serves one batch of mails; this module never retries by itself.
"""

from __future__ import annotations

import email.policy
import smtplib
import ssl
from email.message import EmailMessage as MimeMessage

from flyteidl.admin import notification_pb2

from flytelite.config import NotificationsConfig

# CRLF line ends; headers folded only past RFC 5322's hard limit (a Flyte subject is longer than 78 characters,
# and Python's folding right after "Subject:" reads back with a leading space).
_POLICY = email.policy.SMTP.clone(max_line_length=998)


class DeliveryError(Exception):
    """A mail could not be sent; `permanent` when the server refused it for good (a 5xx to MAIL, RCPT, DATA)."""

    def __init__(self, message: str, permanent: bool = False):
        super().__init__(message)
        self.permanent = permanent


def mime_message(message: notification_pb2.EmailMessage) -> MimeMessage:
    mime = MimeMessage(policy=_POLICY)
    mime["From"] = message.sender_email
    mime["To"] = ", ".join(message.recipients_email)
    mime["Subject"] = message.subject_line
    mime.set_content(message.body, subtype="html", charset="utf-8")
    return mime


class SmtpConnection:
    """One SMTP session, opened on entry (`with SmtpConnection(cfg) as c: c.send(m)`)."""

    def __init__(self, config: NotificationsConfig):
        self.config = config
        self._smtp: smtplib.SMTP | None = None

    def __enter__(self) -> SmtpConnection:
        cfg = self.config
        where = f"{cfg.smtp_host}:{cfg.smtp_port}"
        try:
            smtp = smtplib.SMTP(cfg.smtp_host, cfg.smtp_port, timeout=cfg.smtp_timeout_seconds)
        except (OSError, smtplib.SMTPException) as exc:
            raise DeliveryError(f"cannot reach the SMTP server {where}: {exc}") from exc
        self._smtp = smtp
        try:
            smtp.ehlo()
            if cfg.starttls != "never" and smtp.has_extn("starttls"):
                context = ssl.create_default_context()
                if cfg.smtp_skip_tls_verify:
                    context.check_hostname = False
                    context.verify_mode = ssl.CERT_NONE
                smtp.starttls(context=context)
                smtp.ehlo()
            elif cfg.starttls == "always":
                raise DeliveryError(f"the SMTP server {where} does not offer STARTTLS and notifications.starttls "
                                    f"is 'always'")
            if cfg.smtp_username:
                smtp.login(cfg.smtp_username, cfg.password())
        except DeliveryError:
            self.__exit__()
            raise
        except (OSError, smtplib.SMTPException) as exc:
            self.__exit__()
            raise DeliveryError(f"the SMTP server {where} refused the session: {exc}") from exc
        return self

    def send(self, message: notification_pb2.EmailMessage) -> dict[str, tuple[int, bytes]]:
        """Send one mail; returns the recipients refused while others took it (sent: it is not retried)."""
        assert self._smtp is not None, "send() outside `with`"
        try:
            refused = self._smtp.send_message(mime_message(message), from_addr=message.sender_email,
                                              to_addrs=list(message.recipients_email))
        except smtplib.SMTPRecipientsRefused as exc:
            codes = [code for code, _ in exc.recipients.values()]
            raise DeliveryError(f"every recipient was refused: {exc.recipients}",
                                permanent=all(c >= 500 for c in codes)) from exc
        except (smtplib.SMTPSenderRefused, smtplib.SMTPDataError) as exc:
            raise DeliveryError(f"the SMTP server refused the mail: {exc.smtp_code} {exc.smtp_error!r}",
                                permanent=exc.smtp_code >= 500) from exc
        except (OSError, smtplib.SMTPException) as exc:
            raise DeliveryError(f"sending failed: {exc}") from exc
        return refused

    def __exit__(self, *exc_info) -> None:
        if self._smtp is not None:
            try:
                self._smtp.quit()
            except (OSError, smtplib.SMTPException):
                self._smtp.close()
            self._smtp = None
