"""The `tracing:` block of flytelite's configuration: OpenTelemetry traces (flytelite/tracing.py)."""

from __future__ import annotations

from dataclasses import dataclass
from urllib.parse import urlsplit


@dataclass
class TracingConfig:
    """OpenTelemetry traces (flytelite/tracing.py), sent over OTLP/HTTP or OTLP/gRPC."""

    # Record traces and send them to the collector.
    enabled: bool = False
    # How spans reach the collector: "http" (OTLP/HTTP, protobuf) or "grpc" (OTLP/gRPC).
    protocol: str = "http"
    # The collector: its traces URL for http (default http://localhost:4318/v1/traces), its address for grpc
    # (default http://localhost:4317; https:// for TLS).
    endpoint: str = ""
    # Share of the traces started here that are kept (parent-based: a caller's sampled trace is kept).
    sampler_ratio: float = 1.0
    # The service.name the spans carry.
    service_name: str = "flytelite"

    def __post_init__(self) -> None:
        if not 0.0 <= self.sampler_ratio <= 1.0:
            raise ValueError(f"tracing.sampler_ratio must be between 0 and 1, not {self.sampler_ratio}")
        if self.protocol not in ("http", "grpc"):
            raise ValueError(f"tracing.protocol must be http (OTLP/HTTP) or grpc (OTLP/gRPC), not {self.protocol!r}")
        if self.endpoint and urlsplit(self.endpoint).scheme not in ("http", "https"):
            raise ValueError(f"tracing.endpoint must be an http:// or https:// URL, not {self.endpoint!r}")

    @property
    def collector(self) -> str:
        """The endpoint, or the protocol's usual one on this machine."""
        return self.endpoint or ("http://localhost:4317" if self.protocol == "grpc" else "http://localhost:4318/v1/traces")
