"""HTTP ends of the data proxy's signed URLs: PUT uploads into, and GET downloads from, the blob store.

The blob path comes only from the verified token (never from the request), is
re-checked to lie inside the store, and an upload becomes visible only once
complete and matching its MD5 (streamed to a temp file, then renamed).
"""

from __future__ import annotations

import base64
import binascii
import contextlib
import hashlib
import mimetypes
import os
import tempfile
import uuid

from starlette.requests import Request
from starlette.responses import FileResponse, PlainTextResponse, Response

from flytelite.context import Context
from flytelite.storage.signing import SignatureRejected, SignedBlobs


def _text(status: int, message: str) -> PlainTextResponse:
    return PlainTextResponse(message + "\n", status_code=status)


def _decode_md5(value: str) -> bytes | None:
    try:
        digest = base64.b64decode(value, validate=True)
    except (binascii.Error, ValueError):
        return None
    return digest if len(digest) == 16 else None


class Transfers:
    def __init__(self, ctx: Context, signed: SignedBlobs):
        self.ctx, self.signed = ctx, signed

    async def put(self, request: Request) -> Response:
        """Store the body at the token's path; 403 bad token, 400 MD5 mismatch, 413 too large."""
        try:
            grant, path = self.signed.resolve(request.path_params["token"], "PUT", self.ctx.clock.now().timestamp())
        except SignatureRejected as exc:
            return _text(403, f"upload refused: {exc}")
        limit = self.ctx.config.max_upload_bytes
        declared = request.headers.get("content-length")
        if declared is not None and declared.isdigit() and int(declared) > limit:
            return _too_large(int(declared), limit)

        header_md5 = request.headers.get("content-md5", "")
        if header_md5 and _decode_md5(header_md5) is None:
            return _text(400, f"Content-MD5 header {header_md5!r} is not the base64 of a 16-byte MD5 digest")
        if grant.content_md5 and header_md5 and header_md5 != grant.content_md5:
            return _text(400, f"Content-MD5 header {header_md5} differs from the MD5 {grant.content_md5} this URL "
                              "was signed for; ask for an upload location with the file's own MD5")
        expected = grant.content_md5 or header_md5

        tmp = self._temp_path(path)
        try:
            digest, size = hashlib.md5(), 0
            with open(tmp, "wb") as f:
                async for chunk in request.stream():
                    size += len(chunk)
                    if size > limit:
                        return _too_large(size, limit)
                    digest.update(chunk)
                    f.write(chunk)
            actual = base64.b64encode(digest.digest()).decode()
            if expected and actual != expected:
                return _text(400, f"the body's MD5 is {actual} but {expected} was expected: the upload was "
                                  "corrupted or the file changed after it was hashed; upload it again")
            self._commit(tmp, path)
        finally:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(tmp)
        return _text(200, f"stored {size} bytes at {path}")

    def _temp_path(self, path: str) -> str:
        # Local store: beside the target, so the final rename is atomic. Remote: a spool file on this machine.
        file = self.ctx.blobs.local_file(path)
        if file is not None:
            os.makedirs(os.path.dirname(file), exist_ok=True)
            return f"{file}.{uuid.uuid4().hex}.upload"
        fd, tmp = tempfile.mkstemp(prefix="upload-", dir=self.ctx.config.work_dir)
        os.close(fd)
        return tmp

    def _commit(self, tmp: str, path: str) -> None:
        file = self.ctx.blobs.local_file(path)
        if file is not None:
            os.replace(tmp, file)
        else:
            self.ctx.blobs.fs.put_file(tmp, path)

    async def get(self, request: Request) -> Response:
        """The blob a signed download URL names; 403 bad token, 404 missing or a directory."""
        try:
            _, path = self.signed.resolve(request.path_params["token"], "GET", self.ctx.clock.now().timestamp())
        except SignatureRejected as exc:
            return _text(403, f"download refused: {exc}")
        media_type = mimetypes.guess_type(path)[0] or "application/octet-stream"
        file = self.ctx.blobs.local_file(path)
        if file is not None:
            if not os.path.isfile(file):
                return _text(404, f"{path} does not exist or is a folder (folders cannot be downloaded as one file)")
            return FileResponse(file, media_type=media_type)
        try:
            return Response(self.ctx.blobs.read_bytes(path), media_type=media_type)
        except FileNotFoundError:
            return _text(404, f"{path} does not exist")


def _too_large(size: int, limit: int) -> Response:
    return _text(413, f"upload of {size} bytes exceeds flytelite's max_upload_bytes ({limit}); raise "
                      "max_upload_bytes in the server config to allow it")
