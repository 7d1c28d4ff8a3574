"""What an attempt left in its output prefix, as FlytePropeller's remote file output reader reads it:
outputs.pb (success), error.pb (the ErrorDocument says whose error and whether it is recoverable) or
futures.pb (a dynamic task's workflow). Shared by every plugin whose attempts write these files.

An error.pb with no error in it (empty: the task could not write it, e.g. on a full disk) or cut short is a
recoverable system error, ErrorFileBadFormat, naming the file, as FlytePropeller reads an error document without
an error; the end of the task's log says what happened."""

from __future__ import annotations

import posixpath

from flyteidl.core import errors_pb2
from google.protobuf.message import DecodeError

from flytelite.idl import error_codes as E
from flytelite.idl.error_kinds import SYSTEM, USER
from flytelite.plugins.machinery.core import PluginPhase, PluginPhaseInfo
from flytelite.plugins.machinery.processes import with_log_tail
from flytelite.storage import BlobStore


def written_result(blobs: BlobStore, prefix: str, logs=None, log_path: str = "") -> PluginPhaseInfo | None:
    """The attempt's result from its files; None when it wrote none of them. `log_path`: the task's log on this
    machine, whose end a failure that the error file cannot explain carries."""
    logs = logs or []
    if blobs.exists(posixpath.join(prefix, "outputs.pb")):
        return PluginPhaseInfo(PluginPhase.SUCCESS, logs=logs)
    error_path = posixpath.join(prefix, "error.pb")
    try:
        data = blobs.read_bytes(error_path)
    except FileNotFoundError:
        data = None
    if data is not None:
        return _failure(data, error_path, logs, log_path)
    futures = posixpath.join(prefix, "futures.pb")
    if blobs.exists(futures):
        return PluginPhaseInfo(PluginPhase.SUCCESS, logs=logs, futures_uri=futures)
    return None


def _failure(data: bytes, path: str, logs: list, log_path: str) -> PluginPhaseInfo:
    doc = errors_pb2.ErrorDocument()
    try:
        doc.ParseFromString(data)
    except DecodeError:
        doc.Clear()
    if not doc.HasField("error"):
        what = "is empty" if not data else f"holds no error ({len(data)} bytes; cut short?)"
        message = f"the task's error file {path} {what}: the task failed but could not say why"
        return PluginPhaseInfo.failure(E.ERROR_FILE_BAD_FORMAT, with_log_tail(message, log_path) if log_path
                                       else message, kind=SYSTEM, retryable=True, logs=logs)
    err = doc.error
    kind = err.origin if err.origin in (USER, SYSTEM) else USER
    retryable = err.kind == errors_pb2.ContainerError.RECOVERABLE
    return PluginPhaseInfo.failure(err.code or "TaskFailed", err.message, kind=kind, retryable=retryable, logs=logs)
