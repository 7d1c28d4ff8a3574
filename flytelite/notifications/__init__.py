"""Notifications of launch plans and executions, delivered as e-mail through SMTP (FlyteAdmin's
`pkg/async/notifications` with its SMTP emailer): `email` fills the templates, `outbox` keeps the mails in the
database until sent, `smtp` speaks to the mail server, `processor` sends what is due on one replica at a time."""
