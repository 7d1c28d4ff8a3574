"""S3 as the blob store: fsspec options for the server, flytekit's variables for tasks, presigned URLs.

The server reads and writes S3 through s3fs; task processes reach the same bucket directly with the
variables a Flyte sandbox pod gets (FLYTE_AWS_ENDPOINT, FLYTE_AWS_ACCESS_KEY_ID, FLYTE_AWS_SECRET_ACCESS_KEY);
pyflyte and FlyteRemote get presigned URLs, as FlyteAdmin's data proxy hands out, so uploads and downloads
go to the bucket and never through flytelite. Never reads credentials from anywhere botocore would not.
"""

from __future__ import annotations

import threading
from collections.abc import Mapping
from typing import Any

from flytelite.config import S3Config

# What an S3 client in a task process reads (flytekit's configuration.internal.AWS, as env variables).
FLYTE_AWS_ENDPOINT = "FLYTE_AWS_ENDPOINT"
FLYTE_AWS_ACCESS_KEY_ID = "FLYTE_AWS_ACCESS_KEY_ID"
FLYTE_AWS_SECRET_ACCESS_KEY = "FLYTE_AWS_SECRET_ACCESS_KEY"
# S3 allows presigned URLs (signature version 4) to live a week at most.
MAX_PRESIGN_SECONDS = 7 * 24 * 3600


def split_uri(uri: str) -> tuple[str, str]:
    """(bucket, key) of an s3://bucket/key URI."""
    if not uri.startswith("s3://"):
        raise ValueError(f"{uri} is not an s3:// URI")
    bucket, _, key = uri[len("s3://"):].partition("/")
    return bucket, key


def storage_options(cfg: S3Config) -> dict[str, Any]:
    """s3fs keyword arguments for a resolved S3Config (see S3Config.resolved)."""
    client_kwargs: dict[str, Any] = {}
    if cfg.endpoint:
        client_kwargs["endpoint_url"] = cfg.endpoint
    if cfg.region:
        client_kwargs["region_name"] = cfg.region
    options: dict[str, Any] = {
        "client_kwargs": client_kwargs,
        "config_kwargs": {"s3": {"addressing_style": cfg.addressing_style}},
        # The engine asks whether outputs.pb exists yet while a task writes it: a cached listing would
        # answer from before.
        "use_listings_cache": False,
    }
    if cfg.access_key_id:
        options.update(key=cfg.access_key_id, secret=cfg.secret_access_key)
    return options


def task_environment(cfg: S3Config) -> dict[str, str]:
    """What a task process needs besides the server's own environment to reach the bucket with flytekit."""
    env: dict[str, str] = {}
    if cfg.endpoint:
        env[FLYTE_AWS_ENDPOINT] = cfg.endpoint
    if cfg.region:
        # flytekit has no region setting of its own; botocore reads these.
        env["AWS_REGION"] = env["AWS_DEFAULT_REGION"] = cfg.region
    if cfg.access_key_id:
        env[FLYTE_AWS_ACCESS_KEY_ID] = cfg.access_key_id
        env[FLYTE_AWS_SECRET_ACCESS_KEY] = cfg.secret_access_key
    return env


class Presigner:
    """Presigned GET and PUT URLs for objects of the bucket, signed for the endpoint clients reach."""

    def __init__(self, cfg: S3Config):
        self.cfg = cfg
        self._client = None
        self._lock = threading.Lock()

    def _s3(self):
        # A plain botocore client: signing makes no request, and building one is slow, so it is built once.
        with self._lock:
            if self._client is None:
                import botocore.config
                import botocore.session

                cfg = self.cfg
                self._client = botocore.session.get_session().create_client(
                    "s3", endpoint_url=cfg.public_endpoint or None, region_name=cfg.region or "us-east-1",
                    aws_access_key_id=cfg.access_key_id or None, aws_secret_access_key=cfg.secret_access_key or None,
                    config=botocore.config.Config(signature_version="s3v4",
                                                  s3={"addressing_style": cfg.addressing_style}))
            return self._client

    def get(self, uri: str, seconds: int) -> str:
        bucket, key = split_uri(uri)
        return self._s3().generate_presigned_url(
            "get_object", Params={"Bucket": bucket, "Key": key}, ExpiresIn=_lifetime(seconds))

    def put(self, uri: str, seconds: int, content_md5: str = "") -> str:
        """A PUT URL; with `content_md5` (base64) the upload must send that Content-MD5 header."""
        bucket, key = split_uri(uri)
        params = {"Bucket": bucket, "Key": key}
        if content_md5:
            params["ContentMD5"] = content_md5
        return self._s3().generate_presigned_url("put_object", Params=params, ExpiresIn=_lifetime(seconds))


def _lifetime(seconds: int) -> int:
    return max(1, min(int(seconds), MAX_PRESIGN_SECONDS))


def config_from_task_environment(env: Mapping[str, str]) -> S3Config:
    """The S3 settings task_environment gave a task (for flytelite's own programs in a task's pod)."""
    return S3Config(endpoint=env.get(FLYTE_AWS_ENDPOINT, ""), access_key_id=env.get(FLYTE_AWS_ACCESS_KEY_ID, ""),
                    secret_access_key=env.get(FLYTE_AWS_SECRET_ACCESS_KEY, ""))
