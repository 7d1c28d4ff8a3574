#!/usr/bin/env python3
"""Write a one-layer OCI image archive that `ctr images import` and `skopeo` read: no registry, no image builder.

The layer is a root filesystem tar (--rootfs, as mmdebstrap writes it) followed by the entries the command
line names, in order; the same arguments give the same image digest:

    mkimage.py NAME OUT.tar [--rootfs TAR] [--dir PATH[:MODE]] [--symlink PATH:TARGET]
               [--file PATH:SOURCE[:MODE]] [--text PATH:CONTENT]
               [--entrypoint JSON] [--cmd JSON] [--env K=V] [--workdir DIR]

PATH is inside the image (no leading slash needed); parent folders are added as 0755 when missing. Entries
are owned by root; --rootfs keeps the tar's owners, modes, symlinks and hard links and drops device nodes
(the runtime provides /dev). Every mtime is clamped to $SOURCE_DATE_EPOCH (0 when unset).
Example: the pause image of the test cluster

    mkimage.py localhost/flytelite-pause:3.2 pause.tar --file pause:/path/to/pause:0755 --entrypoint '["/pause"]'
"""

from __future__ import annotations

import argparse
import hashlib
import io
import json
import os
import tarfile
import tempfile
from pathlib import Path
from typing import IO

DEFAULT_PATH = "PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
MANIFEST = "application/vnd.oci.image.manifest.v1+json"
CONFIG = "application/vnd.oci.image.config.v1+json"
LAYER = "application/vnd.oci.image.layer.v1.tar"
# Extended headers worth keeping from a root filesystem tar: file capabilities and ACLs live in xattrs.
# Times (mtime, atime, ctime with their fractions) are dropped so that the clamped mtime is the only one.
KEPT_PAX_PREFIX = "SCHILY.xattr."


class Layer:
    """A tar layer written to a temporary file (a root filesystem is hundreds of MB) and hashed as it is read."""

    def __init__(self, epoch: int = 0) -> None:
        self.epoch = epoch
        self._file = tempfile.TemporaryFile()
        self._tar = tarfile.open(fileobj=self._file, mode="w", format=tarfile.PAX_FORMAT)
        self._seen: set[str] = set()

    def _info(self, path: str, kind: bytes, mode: int) -> tarfile.TarInfo | None:
        path = path.strip("/")
        if not path:
            raise SystemExit("mkimage: an entry needs a path below /")
        parent = path.rpartition("/")[0]
        if parent and parent not in self._seen:
            self.dir(parent, 0o755)
        if path in self._seen:
            if kind == tarfile.DIRTYPE:
                return None
            raise SystemExit(f"mkimage: {path} is given twice")
        self._seen.add(path)
        info = tarfile.TarInfo(path)
        info.type, info.mode, info.mtime = kind, mode, self.epoch
        info.uid = info.gid = 0
        info.uname = info.gname = "root"
        return info

    def dir(self, path: str, mode: int = 0o755) -> None:
        info = self._info(path, tarfile.DIRTYPE, mode)
        if info is not None:
            self._tar.addfile(info)

    def symlink(self, path: str, target: str) -> None:
        info = self._info(path, tarfile.SYMTYPE, 0o777)
        assert info is not None
        info.linkname = target
        self._tar.addfile(info)

    def file(self, path: str, data: bytes, mode: int = 0o644) -> None:
        info = self._info(path, tarfile.REGTYPE, mode)
        assert info is not None
        info.size = len(data)
        self._tar.addfile(info, io.BytesIO(data))

    def rootfs(self, source: Path) -> None:
        """Copy a root filesystem tar in its own order (a hard link must follow its target)."""
        with tarfile.open(source) as tar:
            for member in tar:
                if member.ischr() or member.isblk() or member.isfifo():
                    continue
                path = _inside(member.name)
                if not path:
                    continue
                if path in self._seen:
                    raise SystemExit(f"mkimage: {path} is twice in {source}")
                self._seen.add(path)
                member.name = path
                if member.islnk():
                    member.linkname = _inside(member.linkname)
                member.mtime = min(int(member.mtime), self.epoch)
                member.pax_headers = {k: v for k, v in member.pax_headers.items() if k.startswith(KEPT_PAX_PREFIX)}
                self._tar.addfile(member, tar.extractfile(member) if member.isreg() else None)

    def finish(self) -> IO[bytes]:
        """The layer's tar, from its start."""
        self._tar.close()
        self._file.seek(0)
        return self._file


def _inside(name: str) -> str:
    """A tar member's path as a layer names it: relative, without the './' tar and mmdebstrap write."""
    while name.startswith("./"):
        name = name[2:]
    return name.strip("/") if name != "." else ""


def _sha256(stream: IO[bytes]) -> tuple[str, int]:
    digest, size = hashlib.sha256(), 0
    while chunk := stream.read(1 << 20):
        digest.update(chunk)
        size += len(chunk)
    stream.seek(0)
    return "sha256:" + digest.hexdigest(), size


def write_archive(out: Path, name: str, layer: IO[bytes], config: dict) -> str:
    """Write the OCI image layout (oci-layout, index.json, blobs) as a tar; return the manifest digest."""
    blobs: dict[str, bytes] = {}

    def blob(data: bytes, media_type: str) -> dict:
        digest = "sha256:" + hashlib.sha256(data).hexdigest()
        blobs[digest] = data
        return {"mediaType": media_type, "digest": digest, "size": len(data)}

    layer_digest, layer_size = _sha256(layer)
    layer_desc = {"mediaType": LAYER, "digest": layer_digest, "size": layer_size}
    config = {"architecture": "amd64", "os": "linux", "config": config,
              "rootfs": {"type": "layers", "diff_ids": [layer_digest]},
              "history": [{"created_by": "flytelite scripts/image/mkimage.py"}]}
    manifest = {"schemaVersion": 2, "mediaType": MANIFEST,
                "config": blob(json.dumps(config, sort_keys=True).encode(), CONFIG), "layers": [layer_desc]}
    manifest_desc = blob(json.dumps(manifest, sort_keys=True).encode(), MANIFEST)
    # containerd names the imported image after io.containerd.image.name.
    manifest_desc["annotations"] = {"io.containerd.image.name": name,
                                    "org.opencontainers.image.ref.name": name.rpartition(":")[2]}
    manifest_desc["platform"] = {"architecture": "amd64", "os": "linux"}
    index = {"schemaVersion": 2, "manifests": [manifest_desc]}

    tmp = out.with_name(out.name + ".tmp")
    with tarfile.open(tmp, "w") as tar:
        def put(path: str, size: int, data: IO[bytes]) -> None:
            info = tarfile.TarInfo(path)
            info.size, info.mode, info.mtime = size, 0o644, 0
            tar.addfile(info, data)

        put("oci-layout", *_sized(b'{"imageLayoutVersion": "1.0.0"}'))
        put("index.json", *_sized(json.dumps(index, sort_keys=True).encode()))
        put("blobs/sha256/" + layer_digest.partition(":")[2], layer_size, layer)
        for digest, data in blobs.items():
            put("blobs/sha256/" + digest.partition(":")[2], *_sized(data))
    tmp.replace(out)
    return manifest_desc["digest"]


def _sized(data: bytes) -> tuple[int, IO[bytes]]:
    return len(data), io.BytesIO(data)


def _mode(text: str) -> int:
    return int(text, 8)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("name", help="image reference, e.g. localhost/flytelite-task:v1")
    parser.add_argument("out", type=Path, help="the OCI archive to write")
    parser.add_argument("--rootfs", type=Path, help="a root filesystem tar: the layer's first content")
    # Entries go into the layer in command-line order.
    parser.add_argument("--dir", dest="entries", action="append", type=lambda v: ("dir", v), default=[])
    parser.add_argument("--symlink", dest="entries", action="append", type=lambda v: ("symlink", v))
    parser.add_argument("--file", dest="entries", action="append", type=lambda v: ("file", v))
    parser.add_argument("--text", dest="entries", action="append", type=lambda v: ("text", v))
    parser.add_argument("--entrypoint", type=json.loads, default=None)
    parser.add_argument("--cmd", type=json.loads, default=None)
    parser.add_argument("--env", action="append", default=[])
    parser.add_argument("--workdir", default="/")
    args = parser.parse_args(argv)

    layer = Layer(int(os.environ.get("SOURCE_DATE_EPOCH") or 0))
    if args.rootfs:
        layer.rootfs(args.rootfs)
    for kind, value in args.entries:
        if kind == "dir":
            path, _, mode = value.partition(":")
            layer.dir(path, _mode(mode or "755"))
        elif kind == "symlink":
            path, _, target = value.partition(":")
            layer.symlink(path, target)
        elif kind == "file":
            path, _, rest = value.partition(":")
            source, _, mode = rest.partition(":")
            layer.file(path, Path(source).read_bytes(), _mode(mode) if mode else Path(source).stat().st_mode & 0o7777)
        else:
            path, _, content = value.partition(":")
            layer.file(path, content.encode().decode("unicode_escape").encode())

    env = args.env if any(e.startswith("PATH=") for e in args.env) else [DEFAULT_PATH, *args.env]
    config = {"Env": env, "Entrypoint": args.entrypoint, "Cmd": args.cmd, "WorkingDir": args.workdir}
    with layer.finish() as content:
        digest = write_archive(args.out, args.name, content, config)
    print(f"{args.name} {digest} {args.out.stat().st_size} -> {args.out}")


if __name__ == "__main__":
    main()
