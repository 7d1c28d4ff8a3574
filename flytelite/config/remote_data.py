"""The `remote_data:` block of flytelite's configuration: how much execution data the API returns inline
(FlyteAdmin's `remoteData`)."""

from __future__ import annotations

from dataclasses import dataclass

MB = 1024 * 1024


@dataclass
class RemoteDataConfig:
    """How much execution data the Get*Data RPCs return inline (FlyteAdmin's `remoteData`).

    A LiteralMap of `max_size_bytes` or more comes back as a link only (`full_inputs` / `full_outputs`
    empty, the UrlBlob's `url` a signed download link and `bytes` its size), as FlyteAdmin does with
    signed URLs on; flytekit's FlyteRemote then downloads it. 0 returns everything inline.
    """

    # A LiteralMap this large or larger comes back as a link only (0: everything inline).
    max_size_bytes: int = 2 * MB
    # Lifetime of those links.
    signed_url_seconds: int = 3600

    def __post_init__(self) -> None:
        if self.max_size_bytes < 0:
            raise ValueError(f"remote_data.max_size_bytes must be 0 (always inline) or more, not {self.max_size_bytes}")
        if self.signed_url_seconds <= 0:
            raise ValueError(f"remote_data.signed_url_seconds must be more than 0, not {self.signed_url_seconds}")
