"""The engine's seam for gate signals (the SignalServiceClient FlytePropeller's nodes/gate handler holds)."""

from __future__ import annotations

from typing import Protocol

from flyteidl.admin import signal_pb2


class Client(Protocol):
    def get_or_create_signal(self, request: signal_pb2.SignalGetOrCreateRequest) -> signal_pb2.Signal:
        """The signal, created without a value on the first call (SignalService.GetOrCreateSignal)."""
