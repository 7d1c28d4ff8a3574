"""flyteidl's ExecutionError kinds under the short names the engine uses, defined once (pure)."""

from __future__ import annotations

from flyteidl.core import execution_pb2

USER = execution_pb2.ExecutionError.USER
SYSTEM = execution_pb2.ExecutionError.SYSTEM
