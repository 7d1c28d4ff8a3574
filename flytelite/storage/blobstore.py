"""The one blob-store facade: every blob (inputs, outputs, code, logs' neighbours) goes through here.

A local folder by default (plain absolute paths, never file:// URLs: flytekit's
FlyteFile rejects those), any fsspec URL (s3://...) otherwise. Paths handed out
are the same strings flytekit tasks read and write.
"""

from __future__ import annotations

import itertools
import os
import posixpath
import uuid
from typing import TypeVar

import fsspec
from google.protobuf.message import Message

M = TypeVar("M", bound=Message)
# Temporary names unique to a process (even a forked one: the pid is in them) and a write, without a
# getrandom call per write as uuid4 makes; next() on an itertools.count is atomic under the GIL.
_TMP_PREFIX = uuid.uuid4().hex[:12]
_tmp_counter = itertools.count()


class BlobStore:
    def __init__(self, root: str):
        self.is_local = "://" not in root
        if self.is_local:
            root = os.path.realpath(os.path.expanduser(root))
            os.makedirs(root, exist_ok=True)
        self.root = root.rstrip("/")
        self.fs, _ = fsspec.core.url_to_fs(self.root)

    # -- layout (same shape as Flyte) ---------------------------------------------
    def join(self, *parts: str) -> str:
        return posixpath.join(*parts)

    def metadata_prefix(self) -> str:
        return self.join(self.root, "metadata")

    def execution_dir(self, project: str, domain: str, name: str) -> str:
        return self.join(self.metadata_prefix(), f"{project}-{domain}-{name}")

    def raw_output_prefix(self) -> str:
        return self.join(self.root, "raw")

    def new_raw_location(self) -> str:
        """A fresh `<raw-output-prefix>/<shard>/<unique-id>` directory for offloaded data."""
        unique = uuid.uuid4().hex
        return self.join(self.raw_output_prefix(), unique[:2], unique)

    def uploads_prefix(self) -> str:
        return self.join(self.root, "uploads")

    def contains(self, path: str) -> bool:
        """True when path lies inside this store (used to refuse writes anywhere else)."""
        if self.is_local:
            real = os.path.realpath(path)
            return real == self.root or real.startswith(self.root + os.sep)
        return path.startswith(self.root + "/")

    # -- bytes and protobufs ------------------------------------------------------
    # Plain absolute paths of a local store skip fsspec: the engine reads and writes several small
    # files per node, and fsspec's per-call overhead was a visible share of an engine round.
    def _plain(self, path: str) -> bool:
        return self.is_local and path.startswith("/")

    def exists(self, path: str) -> bool:
        if self._plain(path):
            return os.path.exists(path)
        return self.fs.exists(path)

    def read_bytes(self, path: str) -> bytes:
        if self._plain(path):
            with open(path, "rb") as f:
                return f.read()
        with self.fs.open(path, "rb") as f:
            return f.read()

    def write_bytes(self, path: str, data: bytes) -> None:
        if self.is_local:
            # Write then rename, so a reader never sees half a file after a crash.
            tmp = f"{path}.{_TMP_PREFIX}{os.getpid()}-{next(_tmp_counter)}.tmp"
            try:
                f = open(tmp, "wb")
            except FileNotFoundError:  # the directory is new (creating it only then saves a mkdir per write)
                os.makedirs(os.path.dirname(path), exist_ok=True)
                f = open(tmp, "wb")
            with f:
                f.write(data)
            os.replace(tmp, path)
        else:
            self.fs.pipe_file(path, data)

    def read_proto(self, path: str, cls: type[M]) -> M:
        msg = cls()
        msg.ParseFromString(self.read_bytes(path))
        return msg

    def read_proto_if_exists(self, path: str, cls: type[M]) -> M | None:
        try:
            return self.read_proto(path, cls)
        except FileNotFoundError:
            return None

    def write_proto(self, path: str, msg: Message) -> None:
        self.write_bytes(path, msg.SerializeToString())

    def makedirs(self, path: str) -> None:
        if self.is_local:
            os.makedirs(path, exist_ok=True)

    def size(self, path: str) -> int:
        return self.fs.size(path)

    def delete(self, path: str) -> None:
        if self.fs.exists(path):
            self.fs.rm(path, recursive=True)
