"""`flytelite backup` and `flytelite restore`: a SQLite home as one .tar.gz, taken while a server runs on it.

The database is copied with SQLite's online backup API: a consistent snapshot while the server writes on.
The rest of the home is copied as it is: the blob store (when it is the home's folder), task logs, the keys
of the URL signer and of the self-auth server. The task attempts' working folders are left out: a restored
home's engine starts its attempts again in folders of its own. A PostgreSQL database and a remote blob
store are backed up with their own tools (docs/how-to/deploying.md: pg_dump, the bucket's versioning or copy).
"""

from __future__ import annotations

import sqlite3
import tarfile
import tempfile
from pathlib import Path

from flytelite.config import Config

DATABASE = "flytelite.db"
# The database's own files (the snapshot stands for them) and the attempts' working folder.
_LEFT_OUT = {DATABASE, f"{DATABASE}-wal", f"{DATABASE}-shm", f"{DATABASE}-journal", "work"}


class BackupError(RuntimeError):
    """The home cannot be backed up or restored this way (what to do is in the message)."""


def backup(config: Config, archive: Path) -> int:
    """Write the home of `config` into `archive`; the number of files written."""
    if config.database_url:
        raise BackupError(f"the database is {config.database_url.split('://')[0]}, not this home's SQLite file: back "
                          "it up with its own tools (PostgreSQL: pg_dump --format=custom; docs/how-to/deploying.md)")
    database = config.home / DATABASE
    if not database.exists():
        raise BackupError(f"no flytelite state in {config.home}: pass the --home (or --config) the server runs with")
    archive.parent.mkdir(parents=True, exist_ok=True)
    count = 0
    with tempfile.TemporaryDirectory() as tmp, tarfile.open(archive, "w:gz") as tar:
        snapshot = Path(tmp) / DATABASE
        source = sqlite3.connect(f"file:{database}?mode=ro", uri=True)
        target = sqlite3.connect(snapshot)
        try:
            source.backup(target)
        finally:
            target.close()
            source.close()
        tar.add(snapshot, arcname=DATABASE)
        count += 1
        for path in sorted(config.home.iterdir()):
            if path.name in _LEFT_OUT or path.resolve() == config.attempts_dir.resolve():
                continue
            for member in [path, *sorted(path.rglob("*"))] if path.is_dir() else [path]:
                if member.is_symlink() or not (member.is_file() or member.is_dir()):
                    continue
                tar.add(member, arcname=str(member.relative_to(config.home)), recursive=False)
                count += member.is_file()
    return count


def restore(archive: Path, home: Path) -> int:
    """Unpack `archive` (written by backup) into `home`, which must hold no flytelite state; files unpacked."""
    if (home / DATABASE).exists():
        raise BackupError(f"{home} already holds a flytelite database: restore into an empty or new folder")
    try:
        with tarfile.open(archive, "r:gz") as tar:
            members = tar.getmembers()
            if DATABASE not in {m.name for m in members}:
                raise BackupError(f"{archive} is not a flytelite backup: it has no {DATABASE}")
            home.mkdir(parents=True, exist_ok=True)
            # The "data" filter refuses absolute paths, links out of the folder and special files.
            tar.extractall(home, members=members, filter="data")
    except (tarfile.TarError, OSError) as exc:
        raise BackupError(f"could not restore {archive}: {exc}") from None
    return sum(1 for m in members if m.isfile())
