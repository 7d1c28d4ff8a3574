"""Signed URLs for the blob store: HMAC tokens that grant one method on one blob until an expiry.

flytelite plays the part a cloud bucket plays for FlyteAdmin's data proxy: it
hands out URLs on its own HTTP port and the HTTP handlers trust nothing but the
token. The token carries the blob's path relative to the store root, so a
request can never name a path of its own. The secret is made once per home
folder and never leaves it.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import json
import os
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import quote

from flytelite.errors import FlyteliteError, InvalidArgument
from flytelite.storage.blobstore import BlobStore

SECRET_FILE = "url-signing.key"
UPLOAD_ROUTE = "/dataproxy/upload"
DOWNLOAD_ROUTE = "/dataproxy/download"
# Bumped if the token layout changes, so old tokens fail verification instead of misreading.
_DOMAIN = b"flytelite-signed-url-v1."


class SignatureRejected(FlyteliteError):
    """A signed URL that is malformed, tampered with, for another method, or expired."""

    grpc_code = "PERMISSION_DENIED"
    http_status = 403


@dataclass(frozen=True)
class Grant:
    """What a signed URL allows: `method` on the blob at `path` (relative to the store root) until `expires`."""

    method: str
    path: str
    # Unix seconds.
    expires: int
    # Base64 MD5 digest the uploaded body must have ("" when the client gave none).
    content_md5: str = ""


def load_or_create_secret(home: Path) -> bytes:
    """The server's signing secret: created once with mode 0600 under `home`, then read back."""
    path = Path(home) / SECRET_FILE
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    except FileExistsError:
        secret = path.read_bytes()
        if len(secret) < 32:
            raise FlyteliteError(f"signing secret {path} is shorter than 32 bytes; delete it and restart "
                                 "flytelite to make a new one (URLs signed before become invalid)") from None
        return secret
    with os.fdopen(fd, "wb") as f:
        f.write(os.urandom(32))
    return path.read_bytes()


def safe_relative_path(path: str) -> str:
    """`path` if it is a plain relative path (no '..', '.', empty or absolute parts); InvalidArgument otherwise."""
    parts = path.split("/")
    if not path or path.startswith("/") or "\\" in path or "\x00" in path or any(p in ("", ".", "..") for p in parts):
        raise InvalidArgument(f"{path!r} is not a plain relative path: use names without '/' at either end, "
                              "'..', '.', backslashes or empty parts")
    return path


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def _unb64(text: str) -> bytes:
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


class UrlSigner:
    def __init__(self, secret: bytes):
        self._secret = secret

    def _mac(self, payload: str) -> str:
        return _b64(hmac.new(self._secret, _DOMAIN + payload.encode(), hashlib.sha256).digest())

    def sign(self, grant: Grant) -> str:
        """An opaque URL-safe token for `grant`."""
        body = {"m": grant.method, "p": safe_relative_path(grant.path), "e": grant.expires}
        if grant.content_md5:
            body["md5"] = grant.content_md5
        payload = _b64(json.dumps(body, separators=(",", ":"), sort_keys=True).encode())
        return f"{payload}.{self._mac(payload)}"

    def verify(self, token: str, method: str, now: float) -> Grant:
        """The grant in `token` if its signature is ours, it is for `method` and it has not expired."""
        payload, _, mac = token.partition(".")
        if not payload or not mac or not hmac.compare_digest(mac, self._mac(payload)):
            raise SignatureRejected("the URL's signature is invalid: it was altered or signed by another "
                                    "flytelite home; ask the server for a new URL")
        try:
            body = json.loads(_unb64(payload))
            grant = Grant(method=body["m"], path=body["p"], expires=int(body["e"]), content_md5=body.get("md5", ""))
        except (ValueError, KeyError, TypeError, binascii.Error) as exc:
            raise SignatureRejected(f"the signed URL is malformed ({exc}); ask the server for a new URL") from exc
        if grant.method != method:
            raise SignatureRejected(f"this URL was signed for {grant.method}, not {method}")
        if now > grant.expires:
            raise SignatureRejected(f"this URL expired {int(now - grant.expires)}s ago; ask the server for a new one")
        return grant


def upload_url(base_url: str, token: str) -> str:
    return f"{base_url}{UPLOAD_ROUTE}/{token}"


def download_url(base_url: str, token: str, filename: str) -> str:
    # The file name at the end is for browsers and humans only; the token alone names the blob.
    return f"{base_url}{DOWNLOAD_ROUTE}/{token}/{quote(filename)}"


def relative_blob_path(blobs: BlobStore, path: str) -> str:
    """`path` relative to the store root; InvalidArgument when it lies outside the store."""
    relative = blobs.relative(path)
    if not relative:
        raise InvalidArgument(f"{path} is not inside flytelite's blob store {blobs.root}")
    return safe_relative_path(relative)


class SignedBlobs:
    """Tokens for the blobs of one store: absolute blob paths in, absolute blob paths out."""

    def __init__(self, blobs: BlobStore, signer: UrlSigner):
        self.blobs, self.signer = blobs, signer

    def relative(self, path: str) -> str:
        return relative_blob_path(self.blobs, path)

    def token(self, method: str, path: str, expires: int, content_md5: str = "") -> str:
        return self.signer.sign(Grant(method, self.relative(path), expires, content_md5))

    def resolve(self, token: str, method: str, now: float) -> tuple[Grant, str]:
        """The grant and the absolute blob path a token names; re-checked to lie inside the store."""
        grant = self.signer.verify(token, method, now)
        path = self.blobs.join(self.blobs.root, safe_relative_path(grant.path))
        if not self.blobs.contains(path):
            raise SignatureRejected(f"the signed path {grant.path} leaves the blob store")
        return grant, path
