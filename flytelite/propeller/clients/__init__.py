"""What the engine asks of admin, as interfaces the engine owns (FlytePropeller's controller wiring).

FlytePropeller is built with a launchplan.Executor and Reader, a recovery.Client and a signal
client next to its events.EventSink (flytelite.propeller.events.EventSink); this package holds
their Python counterparts and `AdminClients`, the bundle the composition root
(flytelite.server.app) fills with admin's implementations. Nothing under flytelite.propeller may
import flytelite.admin or read admin's tables: everything admin knows reaches the engine here.
"""

from __future__ import annotations

from dataclasses import dataclass

from flytelite import errors
from flytelite.propeller.clients import launchplan, recovery, signals, tasks


@dataclass(frozen=True)
class AdminClients:
    launch_plans: launchplan.Executor
    launch_plan_reader: launchplan.Reader
    task_reader: tasks.Reader
    recovery: recovery.Client
    signals: signals.Client


class _Unconnected:
    """Stands in for every client of an engine built without admin (tests of the engine alone)."""

    def __getattr__(self, name: str):
        def refuse(*_args, **_kwargs):
            raise errors.FailedPrecondition(
                f"this engine has no admin to call {name}: build it with clients=AdminClients(...) "
                f"(flytelite.server.app.admin_clients) to run launch-plan, gate or recovered nodes")
        return refuse


def unconnected() -> AdminClients:
    """Clients that refuse every call (FailedPrecondition), for an engine that runs without admin."""
    none = _Unconnected()
    return AdminClients(launch_plans=none, launch_plan_reader=none, task_reader=none, recovery=none, signals=none)
