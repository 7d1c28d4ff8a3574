"""The `s3:` block of flytelite's configuration: how the server, its tasks and the URLs it signs reach S3."""

from __future__ import annotations

import dataclasses
import os
from dataclasses import dataclass

# S3 addressing styles botocore knows; "" picks "path" when an endpoint is set (MinIO, moto), "auto" otherwise.
S3_ADDRESSING_STYLES = ("", "path", "virtual", "auto")


@dataclass
class S3Config:
    """How the server, its tasks and the URLs it signs reach S3 when storage_root is s3://bucket/prefix.

    Empty fields fall back to the usual AWS variables (AWS_ENDPOINT_URL_S3 or AWS_ENDPOINT_URL, AWS_REGION
    or AWS_DEFAULT_REGION); empty credentials leave them to botocore's own chain (AWS_ACCESS_KEY_ID and
    AWS_SECRET_ACCESS_KEY, ~/.aws, an instance role), which task processes inherit too.
    """

    # e.g. http://localhost:30002 for MinIO or another S3-compatible server; empty: AWS itself.
    endpoint: str = ""
    # The bucket's region; empty: AWS_REGION or AWS_DEFAULT_REGION.
    region: str = ""
    # The access key, with its secret (both or neither); empty: botocore's own chain finds credentials.
    access_key_id: str = ""
    # The secret of access_key_id.
    secret_access_key: str = ""
    # The endpoint as clients (pyflyte, FlyteRemote, browsers) reach it, for presigned URLs, when it differs
    # from the one the server and its tasks use (a cluster-internal name, say). Empty: endpoint.
    public_endpoint: str = ""
    # How URLs name the bucket, as botocore's addressing_style: "path", "virtual" or "auto"; empty: "path"
    # when an endpoint is set (MinIO, moto), "auto" otherwise.
    addressing_style: str = ""

    def __post_init__(self) -> None:
        if self.addressing_style not in S3_ADDRESSING_STYLES:
            raise ValueError(f"s3.addressing_style must be one of path, virtual, auto (or empty), "
                             f"not {self.addressing_style!r}")
        if bool(self.access_key_id) != bool(self.secret_access_key):
            raise ValueError("s3.access_key_id and s3.secret_access_key go together: set both or neither "
                             "(neither leaves credentials to the AWS variables and ~/.aws)")

    def resolved(self, environ: dict[str, str] | None = None) -> S3Config:
        """A copy with the endpoint, region and addressing style filled in from the AWS variables."""
        env = os.environ if environ is None else environ
        endpoint = self.endpoint or env.get("AWS_ENDPOINT_URL_S3") or env.get("AWS_ENDPOINT_URL") or ""
        return dataclasses.replace(
            self, endpoint=endpoint,
            region=self.region or env.get("AWS_REGION") or env.get("AWS_DEFAULT_REGION") or "",
            public_endpoint=self.public_endpoint or endpoint,
            addressing_style=self.addressing_style or ("path" if endpoint else "auto"))
