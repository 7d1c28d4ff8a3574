"""The `notifications:` block of flytelite's configuration: e-mail for the notifications of launch plans and
executions (FlyteAdmin's `notifications` with the SMTP emailer)."""

from __future__ import annotations

import os
from dataclasses import dataclass

# Flyte's default e-mail subject and body (flyteadmin_config.yaml's `notifications.emailer`); the variables are
# FlyteAdmin's: project, domain, name, phase, error, workflow.* and launch_plan.* (project/domain/name/version).
DEFAULT_EMAIL_SUBJECT = 'Notice: Execution "{{ name }}" has {{ phase }} in "{{ domain }}".'
DEFAULT_EMAIL_BODY = (
    'Execution "{{ name }}" has {{ phase }} in "{{ domain }}". View details at '
    '<a href="{{ console_url }}">{{ console_url }}</a>. {{ error }}')
STARTTLS_MODES = ("auto", "always", "never")


@dataclass
class NotificationsConfig:
    """E-mail for the notifications of launch plans and executions (FlyteAdmin's `notifications` with the SMTP
    emailer). Email, Slack and PagerDuty notifications all go out as e-mail to their recipients, as in Flyte.
    Empty `smtp_host`: nothing is sent (Flyte's "local" type); notifications are then only logged."""

    # The SMTP server mails go through; empty: nothing is sent, notifications are only logged.
    smtp_host: str = ""
    # The SMTP server's port.
    smtp_port: int = 25
    # Login when set (the server must offer AUTH).
    smtp_username: str = ""
    # The login's password; empty: the one in smtp_password_env.
    smtp_password: str = ""
    # An environment variable holding the login's password.
    smtp_password_env: str = ""
    # STARTTLS: "auto" when the server offers it (FlyteAdmin's behaviour), "always" (fail without it), "never".
    starttls: str = "auto"
    # Accept the SMTP server's TLS certificate without verifying it.
    smtp_skip_tls_verify: bool = False
    # The mails' From address.
    sender: str = "flyte-notifications@example.com"
    # The mails' subject, a template with FlyteAdmin's variables (see DEFAULT_EMAIL_SUBJECT).
    subject: str = DEFAULT_EMAIL_SUBJECT
    # The mails' HTML body, a template with the same variables.
    body: str = DEFAULT_EMAIL_BODY
    # A mail that could not be sent is tried again after this long, the wait doubling up to max_retry_seconds.
    # A permanent refusal (5xx) ends it at once.
    retry_seconds: float = 5.0
    # The longest wait before a mail is tried again.
    max_retry_seconds: float = 300.0
    # A mail not sent this long after it was queued is given up (0: never gives up).
    give_up_seconds: float = 7 * 86400.0
    # Seconds between two looks at the outbox for mails due.
    poll_seconds: float = 1.0
    # Seconds the SMTP server may take to answer.
    smtp_timeout_seconds: float = 30.0

    def __post_init__(self) -> None:
        if self.starttls not in STARTTLS_MODES:
            raise ValueError(f"notifications.starttls must be one of {', '.join(STARTTLS_MODES)}, "
                             f"not {self.starttls!r}")
        for key in ("retry_seconds", "max_retry_seconds", "poll_seconds", "smtp_timeout_seconds"):
            if getattr(self, key) <= 0:
                raise ValueError(f"notifications.{key} must be more than 0, not {getattr(self, key)}")
        if self.give_up_seconds < 0:
            raise ValueError(f"notifications.give_up_seconds must be 0 (never) or more, not {self.give_up_seconds}")

    @property
    def enabled(self) -> bool:
        return bool(self.smtp_host)

    def password(self) -> str:
        return self.smtp_password or (os.environ.get(self.smtp_password_env, "") if self.smtp_password_env else "")
