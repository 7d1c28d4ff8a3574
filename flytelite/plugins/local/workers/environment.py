"""What a zygote imported from, as it was when the zygote started: how the pool sees a package installed since.

The zygote stats the folders its interpreter installs packages into (site-packages, the user site) before
it imports anything and reports them (zygote.py); installing or removing a package adds or removes a folder
(its dist-info) there, which changes that folder's mtime. flytekit's own file is watched too (a reinstalled
flytekit). A check is a few stats, cheap enough to run before every attempt; it never reads the folders.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

# A folder whose mtime is this close to the zygote's start may have changed again within the same clock
# tick after the zygote looked (file times come from a coarse clock): such a zygote counts as stale.
RACY_NS = 20_000_000


@dataclass(frozen=True)
class EnvironmentSnapshot:
    """(path, mtime_ns or None for missing) of what a zygote imported from, when it started."""

    watched: tuple[tuple[str, int | None], ...] = ()
    # A watched path that changed around the zygote's start: what it imported may be half old, half new.
    racy: str | None = None

    @classmethod
    def from_ready(cls, site_dirs: dict[str, int | None], flytekit_file: str, spawned_ns: int) -> EnvironmentSnapshot:
        """From the zygote's ready message; `spawned_ns` is the wall-clock time the zygote was started at."""
        racy = next((path for path, mtime in site_dirs.items() if mtime is not None and mtime >= spawned_ns - RACY_NS),
                    None)
        return cls((*site_dirs.items(), (flytekit_file, mtime_ns(flytekit_file))), racy)

    def changed(self) -> str | None:
        """The first watched path that is not as the zygote saw it, or None."""
        if self.racy is not None:
            return self.racy
        for path, seen in self.watched:
            if mtime_ns(path) != seen:
                return path
        return None


def mtime_ns(path: str) -> int | None:
    try:
        return os.stat(path).st_mtime_ns
    except OSError:
        return None
