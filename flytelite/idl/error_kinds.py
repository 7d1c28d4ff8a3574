"""flyteidl's ExecutionError: its kinds under the short names the engine and the plugins use, and ErrorInfo,
the error kept as plain data (pure)."""

from __future__ import annotations

from dataclasses import dataclass

from flyteidl.core import execution_pb2

from flytelite.idl.enums import as_enum

USER = execution_pb2.ExecutionError.USER
SYSTEM = execution_pb2.ExecutionError.SYSTEM


@dataclass
class ErrorInfo:
    """A flyteidl ExecutionError kept as plain data."""

    code: str
    message: str
    kind: int = execution_pb2.ExecutionError.UNKNOWN

    def to_proto(self) -> execution_pb2.ExecutionError:
        return execution_pb2.ExecutionError(code=self.code, message=self.message,
                                            kind=as_enum(execution_pb2.ExecutionError.ErrorKind, self.kind))

    @classmethod
    def from_proto(cls, err: execution_pb2.ExecutionError) -> ErrorInfo:
        return cls(code=err.code, message=err.message, kind=err.kind)

    @property
    def is_system(self) -> bool:
        return self.kind == execution_pb2.ExecutionError.SYSTEM
