"""Literal offloading as FlytePropeller does it (nodes/common/utils.go: OffloadLargeLiteral,
CheckOffloadingCompat; config `literal-offloading-config`).

A value of `literal_offloading.min_size_mb` or more travels as a Literal whose `offloaded_metadata` names a
blob holding the real Literal (its uri, size and inferred type). Tasks offload their own outputs (flytekit's
entrypoint, told by the _F_L_* variables, plugins/environment.py); the engine offloads what it builds
itself: a map task's gathered output lists. Readers that need the value (bindings, array inputs, copilot)
read the blob. A task registered with an SDK too old to read such inputs is failed before it starts.
"""

from __future__ import annotations

import base64
import hashlib
import re

from flyteidl.core import literals_pb2, tasks_pb2

from flytelite.compiler.literals import literal_type_for_literal
from flytelite.config import LiteralOffloadingConfig
from flytelite.idl import error_codes as E
from flytelite.propeller.nodes.handler import PhaseInfo

MB = 1024 * 1024
_SEMVER = re.compile(r"v?(\d+)\.(\d+)\.(\d+)")


class LiteralTooLarge(ValueError):
    """A value past `literal_offloading.max_size_mb` (a user error: the workflow makes it)."""


def offload_large_literal(blobs, uri: str, literal: literals_pb2.Literal, cfg: LiteralOffloadingConfig) -> bool:
    """Write `literal` to `uri` and turn it into its offloaded form when it is large enough (in place);
    True if it was offloaded. LiteralTooLarge past the fail-fast size."""
    if not cfg.enabled:
        return False
    size = literal.ByteSize()
    if size // MB >= cfg.max_size_mb:
        raise LiteralTooLarge(f"a literal of {size // MB} MB is larger than the max size of {cfg.max_size_mb} MB "
                              f"for offloading (literal_offloading.max_size_mb)")
    if size // MB < cfg.min_size_mb:
        return False
    inferred = literal_type_for_literal(literal)
    if inferred is None:
        raise LiteralTooLarge("the type of a large literal cannot be determined, so it cannot be offloaded")
    blobs.write_proto(uri, literal)
    digest = literal.hash or base64.urlsafe_b64encode(
        hashlib.sha256(literal.SerializeToString(deterministic=True)).digest()).rstrip(b"=").decode()
    literal.Clear()
    literal.hash = digest
    literal.offloaded_metadata.CopyFrom(literals_pb2.LiteralOffloadedMetadata(
        uri=uri, size_bytes=size, inferred_type=inferred))
    return True


def offloading_refusal(cfg: LiteralOffloadingConfig, inputs: literals_pb2.LiteralMap,
                       task: tasks_pb2.TaskTemplate | None) -> PhaseInfo | None:
    """The failure of a task node whose task cannot read the offloaded inputs it would get, else None."""
    if task is None or not any(lit.HasField("offloaded_metadata") for lit in inputs.literals.values()):
        return None
    runtime = task.metadata.runtime
    sdk = tasks_pb2.RuntimeMetadata.RuntimeType.Name(runtime.type)
    if _supported(cfg, sdk, runtime.version):
        return None
    if not cfg.enabled:
        return PhaseInfo.failure(E.LITERAL_OFFLOADING_DISABLED, f"task {task.id.name} is trying to consume offloaded "
                                 "literals but literal_offloading is not enabled")
    return PhaseInfo.failure(
        E.LITERAL_OFFLOADING_NOT_SUPPORTED,
        f"Literal offloading is not supported for task {task.id.name}: it was registered with SDK version "
        f"{runtime.version or '(none)'}, older than {cfg.supported_sdk_versions.get(sdk, '(none for ' + sdk + ')')}"
        f", the least that reads offloaded literals; register it with a newer flytekit")


def _supported(cfg: LiteralOffloadingConfig, sdk: str, version: str) -> bool:
    least = cfg.supported_sdk_versions.get(sdk)
    have, need = _SEMVER.search(version or ""), _SEMVER.search(least or "")
    if have is None or need is None:
        return False
    return tuple(map(int, have.groups())) >= tuple(map(int, need.groups()))
