"""The server's log lines: text or JSON, levels per component, and the execution, node and attempt a record
was logged for.

The engine sets those in context variables while it evaluates an execution's round and each of its nodes
(`current`); a filter copies them onto every record, which the JSON format writes as fields and the text
format appends in brackets. And where a task attempt's log file is (resolve_log), for those who serve it.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from pathlib import Path

from flytelite.config import LoggingConfig

_EXECUTION: ContextVar[str] = ContextVar("flytelite_execution", default="")
_NODE: ContextVar[str] = ContextVar("flytelite_node", default="")
_ATTEMPT: ContextVar[int | None] = ContextVar("flytelite_attempt", default=None)
TEXT_FORMAT = "%(asctime)s %(levelname)s %(name)s: %(message)s%(ids)s"


@contextmanager
def execution_scope(execution: str) -> Iterator[None]:
    """Records logged inside name the execution (project/domain/name)."""
    token = _EXECUTION.set(execution)
    try:
        yield
    finally:
        _EXECUTION.reset(token)


def enter_node(node: str, attempt: int) -> tuple:
    """Records logged until leave_node(what this returned) name the node execution and its attempt (a pair
    of calls rather than a context manager: the engine enters every node it looks at in every round)."""
    return _NODE.set(node), _ATTEMPT.set(attempt)


def leave_node(tokens: tuple) -> None:
    _NODE.reset(tokens[0])
    _ATTEMPT.reset(tokens[1])


class _Ids(logging.Filter):
    def filter(self, record: logging.LogRecord) -> bool:
        ids = {"execution": _EXECUTION.get(), "node": _NODE.get(), "attempt": _ATTEMPT.get()}
        record.__dict__.update(ids)
        parts = [f"{k}={v}" for k, v in ids.items() if v not in ("", None)]
        record.__dict__["ids"] = f" [{' '.join(parts)}]" if parts else ""
        return True


class JsonFormatter(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        line = {"time": self.formatTime(record), "level": record.levelname, "logger": record.name,
                "message": record.getMessage()}
        for key in ("execution", "node", "attempt"):
            value = getattr(record, key, None)
            if value not in ("", None):
                line[key] = value
        if record.exc_info:
            line["exception"] = self.formatException(record.exc_info)
        return json.dumps(line)


def configure(config: LoggingConfig, level: str | None = None) -> None:
    """Set up the root logger's one handler and every configured level; `level` overrides config.level."""
    handler = logging.StreamHandler()
    handler.addFilter(_Ids())
    handler.setFormatter(JsonFormatter() if config.format == "json" else logging.Formatter(TEXT_FORMAT))
    root = logging.getLogger()
    for old in list(root.handlers):
        root.removeHandler(old)
    root.addHandler(handler)
    root.setLevel((level or config.level).upper())
    logging.getLogger("alembic").setLevel(logging.WARNING)
    for name, name_level in config.levels.items():
        logging.getLogger(name).setLevel(name_level.upper())


def resolve_log(logs_dir: Path, relative: str) -> Path | None:
    """The log file `relative` names under `logs_dir`, or None if it is missing, lies outside, or cannot
    name a file at all (a NUL byte, a name longer than the file system allows)."""
    root = logs_dir.resolve()
    try:
        target = (root / relative).resolve()
        if not target.is_relative_to(root) or target == root or not target.is_file():
            return None
    except (ValueError, OSError):
        return None
    return target
