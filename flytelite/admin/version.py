"""GetVersion: what FlyteAdmin's version manager answers, for flytelite.

flytekit's `get_control_plane_version` (and `pyflyte info`) reads `Version`; Flyte's own releases
answer a `v`-prefixed semantic version, so flytelite answers `v<its package version>`. `Build` names
the implementation and `BuildTime` is when this copy of flytelite was installed.
"""

from __future__ import annotations

import functools
from datetime import datetime, timezone
from importlib import metadata

from flyteidl.admin import version_pb2

BUILD = "flytelite"


@functools.cache
def control_plane_version() -> version_pb2.Version:
    try:
        dist = metadata.distribution("flytelite")
    except metadata.PackageNotFoundError:  # running from a source tree that was never installed
        return version_pb2.Version(Version="v0.0.0-dev", Build=BUILD, BuildTime="")
    built = ""
    folder = getattr(dist, "_path", None)  # the installed .dist-info folder (PathDistribution)
    if folder is not None and folder.exists():
        built = datetime.fromtimestamp(folder.stat().st_mtime, timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
    return version_pb2.Version(Version=f"v{dist.version}", Build=BUILD, BuildTime=built)


class VersionApi:
    def GetVersion(self, request: version_pb2.GetVersionRequest, context) -> version_pb2.GetVersionResponse:
        return version_pb2.GetVersionResponse(control_plane_version=control_plane_version())
