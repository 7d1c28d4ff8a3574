"""The `literal_offloading:` block of flytelite's configuration: large task outputs as blobs of their own
(FlytePropeller's `literal-offloading-config`)."""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass
class LiteralOffloadingConfig:
    """FlytePropeller's `literal-offloading-config`: task outputs (and gathered map-task outputs) of
    `min_size_mb` or more are written to a blob of their own and passed on as a Literal with
    `offloaded_metadata`; `max_size_mb` or more fails the task. Tasks registered with an SDK older than
    `supported_sdk_versions` names cannot read such inputs and fail with LiteralOffloadingNotSupported.
    On by default (Flyte's default is off because of old SDKs; flytelite's clients are flytekit 1.16)."""

    # Offload large outputs, and tell flytekit's entrypoint to offload its own.
    enabled: bool = True
    # Outputs of this many MB or more are offloaded.
    min_size_mb: int = 10
    # Outputs of this many MB or more fail the task.
    max_size_mb: int = 1000
    # RuntimeMetadata.RuntimeType name -> least SDK version that reads offloaded literals.
    supported_sdk_versions: dict[str, str] = field(default_factory=lambda: {"FLYTE_SDK": "1.13.14"})

    def __post_init__(self) -> None:
        if not 0 < self.min_size_mb < self.max_size_mb:
            raise ValueError(f"literal_offloading needs 0 < min_size_mb < max_size_mb, not {self.min_size_mb} "
                             f"and {self.max_size_mb}")
