"""An attempt's folders on this machine: its working folder, the folder its code is unpacked into, its temp
folder and its Ray temp folder. All are the attempt's own, and deleted after it (cleaner.py)."""

from __future__ import annotations

import hashlib
import os
import tempfile
from pathlib import Path


def temp_root(attempts_dir: Path) -> str:
    """The folder of attempts' temp folders: one per attempts folder (servers on one machine each have their
    own), under the system's temp folder."""
    where = hashlib.sha1(str(attempts_dir.resolve()).encode()).hexdigest()[:10]
    return os.path.join(tempfile.gettempdir(), f"flytelite-{where}")


def temp_dir(root: str, marker: str) -> str:
    """The attempt's own temp folder (TMPDIR; a worker's item gets it as tempfile.tempdir), deleted with its
    other folders: flytekit leaves a sandbox folder with copies of the inputs and outputs in it on every run.
    Short, under the system's temp folder: a unix socket's path is at most 107 bytes, and
    multiprocessing.Manager() puts one two levels below it, which a temp folder beside the attempt's working
    folder in the server's home leaves too little room for."""
    return os.path.join(root, hashlib.sha1(marker.encode()).hexdigest()[:16])


def ray_dir(marker: str) -> str:
    """The attempt's Ray temp folder (RAY_TMPDIR), for a Ray the task starts itself (modin, ray.init()) or the
    compute plugin starts for it: Ray puts unix sockets (at most 107 bytes) three levels below it, which leaves
    it 45 bytes. The attempt's temp folder is too deep, and so may the system's be (TMPDIR): /tmp it is."""
    return ray_prefix() + hashlib.sha1(marker.encode()).hexdigest()[:12]


def ray_prefix() -> str:
    """What every attempt's Ray temp folder's path starts with."""
    root = "/tmp" if os.access("/tmp", os.W_OK) else tempfile.gettempdir()
    return os.path.join(root, "ray-")


def claim_folder(path: str) -> bool:
    """Create the folder (and its missing parents); False if it was there already."""
    try:
        os.mkdir(path)
    except FileExistsError:
        return False
    except FileNotFoundError:
        os.makedirs(os.path.dirname(path), exist_ok=True)
        try:
            os.mkdir(path)
        except FileExistsError:
            return False
    return True


def ensure_dest_dir(argv: list[str], work_dir: Path) -> tuple[list[str], Path | None]:
    """`--dest-dir` (where the code tarball is unpacked) must exist, and must be this attempt's own; the
    command, and the folder (None: the command unpacks no code).

    A relative one (flytekit's default is `.`) already is, as the attempt runs in its own folder; it
    stays as written, because flytekit serializes it into what a running task registers (an eager
    workflow's tasks), which must equal what `pyflyte register` registered from outside.
    """
    argv = list(argv)
    for i, arg in enumerate(argv[:-1]):
        if arg == "--dest-dir":
            dest = argv[i + 1]
            if os.path.isabs(dest):
                # An absolute dest dir would be shared by every attempt (and code version): keep it per attempt.
                path = work_dir / "code"
                argv[i + 1] = str(path)
            else:
                path = work_dir / dest
            if path != work_dir:  # flytekit's default, ".", is the attempt's folder, made already
                path.mkdir(parents=True, exist_ok=True)
            return argv, path.resolve()
    return argv, None


def importable(env: dict[str, str], code_dir: Path) -> dict[str, str]:
    """`env` with the unpacked code on PYTHONPATH, as Flyte's default images have their workdir (where the code
    is unpacked) and as newer flytekit's fast-execute adds it itself: older flytekit's inner
    `pyflyte-execute`, a console script, would not find the task's module otherwise."""
    current = env.get("PYTHONPATH")
    return {**env, "PYTHONPATH": f"{current}{os.pathsep}{code_dir}" if current else str(code_dir)}
