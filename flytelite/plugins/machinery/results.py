"""What an attempt left in its output prefix, as FlytePropeller's remote file output reader reads it:
outputs.pb (success), error.pb (the ErrorDocument says whose error and whether it is recoverable) or
futures.pb (a dynamic task's workflow). Shared by every plugin whose attempts write these files."""

from __future__ import annotations

import posixpath

from flyteidl.core import errors_pb2

from flytelite.idl.error_kinds import SYSTEM, USER
from flytelite.plugins.machinery.core import PluginPhase, PluginPhaseInfo
from flytelite.storage import BlobStore


def written_result(blobs: BlobStore, prefix: str, logs=None) -> PluginPhaseInfo | None:
    """The attempt's result from its files; None when it wrote none of them."""
    logs = logs or []
    if blobs.exists(posixpath.join(prefix, "outputs.pb")):
        return PluginPhaseInfo(PluginPhase.SUCCESS, logs=logs)
    doc = blobs.read_proto_if_exists(posixpath.join(prefix, "error.pb"), errors_pb2.ErrorDocument)
    if doc is not None:
        err = doc.error
        kind = err.origin if err.origin in (USER, SYSTEM) else USER
        retryable = err.kind == errors_pb2.ContainerError.RECOVERABLE
        return PluginPhaseInfo.failure(err.code or "TaskFailed", err.message, kind=kind, retryable=retryable,
                                       logs=logs)
    futures = posixpath.join(prefix, "futures.pb")
    if blobs.exists(futures):
        return PluginPhaseInfo(PluginPhase.SUCCESS, logs=logs, futures_uri=futures)
    return None
