"""Signed links to blobs, whatever the store: where a client PUTs an upload and GETs a download.

A local store's links are flytelite's own signed URLs on its HTTP port (signing.py; console/transfer.py
moves the bytes). An S3 store's links are the bucket's presigned URLs (s3.py): the bytes never pass
through flytelite, as with FlyteAdmin's data proxy on a cloud bucket.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Protocol

from flytelite.storage.blobstore import BlobStore
from flytelite.storage.s3 import Presigner
from flytelite.storage.signing import SignedBlobs, download_url, relative_blob_path, upload_url


class BlobLinks(Protocol):
    def upload(self, path: str, now: float, seconds: int, content_md5: str = "") -> str:
        """A URL that accepts one PUT of the blob at `path` for `seconds` (with that base64 Content-MD5)."""
        ...

    def download(self, path: str, now: float, seconds: int) -> str:
        """A URL that GETs the blob at `path` for `seconds`; InvalidArgument when it lies outside the store."""
        ...


class ServerLinks:
    """Links on this server's own port (a local store). `base_url` is read per link (the port is bound
    after the services are built) and answers "" for links relative to the server."""

    def __init__(self, signed: SignedBlobs, base_url: Callable[[], str]):
        self.signed, self.base_url = signed, base_url

    def upload(self, path: str, now: float, seconds: int, content_md5: str = "") -> str:
        return upload_url(self.base_url(), self.signed.token("PUT", path, math.ceil(now) + seconds, content_md5))

    def download(self, path: str, now: float, seconds: int) -> str:
        # The file name at the end is for browsers and humans only; the token alone names the blob.
        token = self.signed.token("GET", path, math.ceil(now) + seconds)
        return download_url(self.base_url(), token, path.rstrip("/").rsplit("/", 1)[-1])


class PresignedLinks:
    """The bucket's own presigned URLs (an S3 store)."""

    def __init__(self, blobs: BlobStore, presigner: Presigner):
        self.blobs, self.presigner = blobs, presigner

    def upload(self, path: str, now: float, seconds: int, content_md5: str = "") -> str:
        return self.presigner.put(self._inside(path), seconds, content_md5)

    def download(self, path: str, now: float, seconds: int) -> str:
        return self.presigner.get(self._inside(path), seconds)

    def _inside(self, path: str) -> str:
        relative_blob_path(self.blobs, path)
        return path


def blob_links(blobs: BlobStore, signed: SignedBlobs, base_url: Callable[[], str]) -> BlobLinks:
    """The links of this store: presigned by the bucket for S3, signed by this server otherwise."""
    if blobs.presigner is not None:
        return PresignedLinks(blobs, blobs.presigner)
    return ServerLinks(signed, base_url)
