"""The one blob-store facade: every blob (inputs, outputs, code, logs' neighbours) goes through here.

A local folder by default, any fsspec URL (s3://...) otherwise. A local folder's blobs are handed out
as `local:///abs/path` URIs: fsspec opens them as local files (its LocalFileSystem answers to both
`file` and `local`), while flytekit, which calls anything but a `file` URI remote, treats them as
remote data, as it treats S3 on a Flyte cluster: it downloads inputs instead of checking them with
os.path, and uploads outputs to the raw output prefix. Plain absolute paths and file:// URIs (what
older homes stored) are still read and written. (Task processes write such URIs through fsspec with
folders made on demand: see plugins/task_site.)

An s3:// root is read and written through s3fs with the endpoint, region and credentials of the
config's `s3` section (storage/s3.py); its execution data lies under Flyte's own metadata prefix,
`<root>/metadata/propeller`, as on a Flyte cluster. A local store keeps `<root>/metadata`, where
existing homes have their executions.
"""

from __future__ import annotations

import contextlib
import itertools
import os
import posixpath
import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any, TypeVar

import fsspec
from google.protobuf.message import Message

from flytelite.config import S3Config
from flytelite.storage import s3

M = TypeVar("M", bound=Message)
# Temporary names unique to a process (even a forked one: the pid is in them) and a write, without a
# getrandom call per write as uuid4 makes; next() on an itertools.count is atomic under the GIL.
_TMP_PREFIX = uuid.uuid4().hex[:12]
_tmp_counter = itertools.count()
LOCAL_SCHEME = "local://"


def _remove(file: str) -> None:
    with contextlib.suppress(OSError):
        os.remove(file)


def _create(file: str) -> int:
    """A new file's descriptor; FileExistsError if it is there."""
    return os.open(file, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666)


def local_path(uri: str) -> str | None:
    """The file path a local blob URI names (local://, file:// or a plain absolute path); None otherwise."""
    if uri.startswith(LOCAL_SCHEME):
        return uri[len(LOCAL_SCHEME):]
    if uri.startswith("file://"):
        return uri[len("file://"):]
    return uri if uri.startswith("/") else None


def _walk_files(folder: str) -> Iterator[str]:
    """The files under `folder`, a folder's entries in name order, each subfolder's files in its place."""
    for entry in sorted(os.scandir(folder), key=lambda e: e.name):
        if entry.is_dir():
            yield from _walk_files(entry.path)
        else:
            yield entry.path


class BlobStore:
    def __init__(self, root: str, s3_config: S3Config | None = None):
        # Called with ("read" or "write", milliseconds) after each read and write (metrics); None: not timed.
        self.observe: Callable[[str, float], None] | None = None
        # (name, attributes) -> a span to end, or None: tracing's child spans of reads and writes.
        self.trace: Callable[[str, dict], Any] | None = None
        folder = local_path(root) if "://" in root else os.path.expanduser(root)
        self.is_local = folder is not None
        if folder is not None:
            self.folder = os.path.realpath(folder)
            os.makedirs(self.folder, exist_ok=True)
            root = LOCAL_SCHEME + self.folder
        self.root = root.rstrip("/")
        # Set for an s3:// root: the resolved S3 settings and the signer of its presigned URLs.
        self.s3: S3Config | None = None
        self.presigner: s3.Presigner | None = None
        if self.root.startswith("s3://"):
            self.s3 = (s3_config or S3Config()).resolved()
            self.presigner = s3.Presigner(self.s3)
            self.fs = fsspec.filesystem("s3", **s3.storage_options(self.s3))
        else:
            self.fs, _ = fsspec.core.url_to_fs(self.root)

    def task_environment(self) -> dict[str, str]:
        """Variables a task process needs to read and write this store itself (none for a local one)."""
        return s3.task_environment(self.s3) if self.s3 is not None else {}

    # -- layout (same shape as Flyte) ---------------------------------------------
    def join(self, *parts: str) -> str:
        return posixpath.join(*parts)

    def metadata_prefix(self) -> str:
        return self.join(self.root, "metadata" if self.is_local else "metadata/propeller")

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
        return self.relative(path) is not None

    def relative(self, path: str) -> str | None:
        """`path` relative to the store's root (in any form the store understands); None when outside."""
        if self.is_local:
            file = self.local_file(path)
            if file is None:
                return None
            real = os.path.realpath(file)
            if real == self.folder:
                return ""
            return real[len(self.folder) + 1:] if real.startswith(self.folder + os.sep) else None
        if path == self.root:
            return ""
        return path[len(self.root) + 1:] if path.startswith(self.root + "/") else None

    # -- bytes and protobufs ------------------------------------------------------
    # A local store's blobs skip fsspec: the engine reads and writes several small files per node, and
    # fsspec's per-call overhead was a visible share of an engine round.
    def local_file(self, path: str) -> str | None:
        """The file a blob of a local store is; None for a remote store."""
        return local_path(path) if self.is_local else None

    def exists(self, path: str) -> bool:
        file = self.local_file(path)
        if file is not None:
            return os.path.exists(file)
        return self.fs.exists(path)

    def read_bytes(self, path: str) -> bytes:
        if self.observe is None and self.trace is None:
            return self._read_bytes(path)
        with self._observed("read", path):
            return self._read_bytes(path)

    def write_bytes(self, path: str, data: bytes) -> None:
        if self.observe is None and self.trace is None:
            self._write_bytes(path, data)
            return
        with self._observed("write", path):
            self._write_bytes(path, data)

    @contextmanager
    def _observed(self, op: str, path: str) -> Iterator[None]:
        span = self.trace(f"blob {op}", {"blob.path": path}) if self.trace is not None else None
        start = time.perf_counter()
        try:
            yield
        finally:
            if self.observe is not None:
                self.observe(op, (time.perf_counter() - start) * 1000.0)
            if span is not None:
                span.end()

    def _read_bytes(self, path: str) -> bytes:
        file = self.local_file(path)
        if file is not None:
            with open(file, "rb") as f:
                return f.read()
        with self.fs.open(path, "rb") as f:
            return f.read()

    def _write_bytes(self, path: str, data: bytes) -> None:
        file = self.local_file(path)
        if file is not None:
            # Write then rename, so a reader never sees half a file after a crash.
            tmp = f"{file}.{_TMP_PREFIX}{os.getpid()}-{next(_tmp_counter)}.tmp"
            try:
                f = open(tmp, "wb")
            except FileNotFoundError:  # the directory is new (creating it only then saves a mkdir per write)
                os.makedirs(os.path.dirname(file), exist_ok=True)
                f = open(tmp, "wb")
            try:
                with f:
                    f.write(data)
                os.replace(tmp, file)
            except BaseException:
                _remove(tmp)  # what a full disk took of it
                raise
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

    def write_unread_proto(self, path: str, msg: Message) -> None:
        """Write a file nothing reads until the caller says it is there (a node's inputs, before the node is
        queued): a new local file is written in place, without write_bytes's rename; one that exists (a crash
        cut its writing short, or a process that an earlier life of the server started may be reading it) is
        replaced whole, as write_bytes does."""
        data = msg.SerializeToString()
        file = self.local_file(path)
        if file is None:
            self.write_bytes(path, data)
            return
        try:
            fd = _create(file)
        except FileNotFoundError:  # the directory is new (creating it only then saves a mkdir per write)
            os.makedirs(os.path.dirname(file), exist_ok=True)
            fd = _create(file)
        except FileExistsError:
            self.write_bytes(path, data)
            return
        try:
            with open(fd, "wb") as f:
                f.write(data)
        except BaseException:
            _remove(file)  # half a file (a full disk) must not be read as the message
            raise

    def makedirs(self, path: str) -> None:
        file = self.local_file(path)
        if file is not None:
            os.makedirs(file, exist_ok=True)

    def size(self, path: str) -> int:
        file = self.local_file(path)
        if file is not None:
            return os.path.getsize(file)
        return self.fs.size(path)

    def files(self, path: str, limit: int) -> list[str] | None:
        """The first `limit` files under the folder `path` (at any depth, in name order), as blob URIs; None when
        `path` is not a folder (a FlyteDirectory's or a StructuredDataset's URI names one)."""
        folder = self.local_file(path)
        if folder is not None:
            if not os.path.isdir(folder):
                return None
            return [LOCAL_SCHEME + file for file in itertools.islice(_walk_files(folder), limit)]
        if not self.fs.isdir(path):
            return None
        return [self.fs.unstrip_protocol(key) for key in sorted(self.fs.find(path))[:limit]]

    def delete(self, path: str) -> None:
        if self.fs.exists(path):
            self.fs.rm(path, recursive=True)
