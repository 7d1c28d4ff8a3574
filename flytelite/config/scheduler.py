"""The `scheduler:` block of flytelite's configuration: how launch plans' schedules run (flytelite/scheduler)."""

from __future__ import annotations

from dataclasses import dataclass

# What the scheduler does with slots that came due while it was not running (see flytelite/scheduler).
CATCHUP_POLICIES = ("all", "latest", "none")


@dataclass
class SchedulerConfig:
    # Run launch plans' schedules (false: schedules are kept, and none starts an execution).
    enabled: bool = True
    # Seconds between two looks at the active schedules.
    tick_seconds: float = 1.0
    # Missed slots: "all" runs every one (Flyte's behaviour), "latest" only the newest, "none" skips them.
    catchup: str = "all"
    # A slot counts as missed when it is older than this when the scheduler comes to it.
    catchup_grace_seconds: float = 60.0
    # Time zone cron schedules are read in (Flyte's scheduler reads them in UTC with use_utc_tz).
    timezone: str = "UTC"

    def __post_init__(self) -> None:
        if self.catchup not in CATCHUP_POLICIES:
            raise ValueError(f"scheduler.catchup must be one of {', '.join(CATCHUP_POLICIES)}, "
                             f"not {self.catchup!r}")
