"""The `grpc:` block of flytelite's configuration: the largest messages the gRPC API takes and gives."""

from __future__ import annotations

from dataclasses import dataclass

MB = 1024 * 1024


@dataclass
class GrpcConfig:
    """Largest gRPC messages the API takes and gives (FlyteAdmin's `server.grpc.maxMessageSizeBytes`, one value
    for both there). flytekit itself reads at most 20 MiB per reply, so raising the send limit past that helps
    other clients only; large execution data travels as links (remote_data) instead."""

    # The largest request the API takes.
    max_receive_message_bytes: int = 64 * MB
    # The largest reply the API gives.
    max_send_message_bytes: int = 64 * MB

    def __post_init__(self) -> None:
        for key in ("max_receive_message_bytes", "max_send_message_bytes"):
            if getattr(self, key) <= 0:
                raise ValueError(f"grpc.{key} must be more than 0, not {getattr(self, key)}")
