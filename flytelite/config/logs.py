"""The `logging:` block of flytelite's configuration: the format and levels of the server's log lines
(flytelite/logs.py)."""

from __future__ import annotations

from dataclasses import dataclass, field

LOG_FORMATS = ("text", "json")


@dataclass
class LoggingConfig:
    """The server's log lines (flytelite/logs.py)."""

    # "text" (one line per record) or "json" (one JSON object per line, with the execution, node and attempt
    # a record was logged for).
    format: str = "text"
    # The level of every logger (`flytelite start --log-level` overrides it).
    level: str = "info"
    # Levels of some loggers, by logger name (a component: e.g. {"flytelite.propeller": "debug",
    # "flytelite.scheduler": "warning"}).
    levels: dict[str, str] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if self.format not in LOG_FORMATS:
            raise ValueError(f"logging.format must be one of {', '.join(LOG_FORMATS)}, not {self.format!r}")
        for name, level in {"logging.level": self.level, **{f"logging.levels[{k!r}]": v
                                                            for k, v in self.levels.items()}}.items():
            if level.upper() not in ("DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL"):
                raise ValueError(f"{name} must be debug, info, warning, error or critical, not {level!r}")
