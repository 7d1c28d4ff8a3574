"""The API's message size limits, with refusals that name the limit and the config key that raises it.

gRPC's own refusal ("Received message larger than max (N vs. M)") names neither the setting nor what to do,
and a reply past the send limit reaches the client as a bare RESOURCE_EXHAUSTED. FlyteAdmin sets both limits
from `server.grpc.maxMessageSizeBytes`; flytelite has `grpc.max_receive_message_bytes` and
`grpc.max_send_message_bytes`. gRPC itself reads requests up to twice the receive limit (so that this
interceptor can refuse them with a useful message) and cuts anything larger.
"""

from __future__ import annotations

import grpc

from flytelite.config import GrpcConfig


class _Oversized:
    """Stands for a request that was not parsed because it is over the receive limit."""

    def __init__(self, size: int):
        self.size = size


def server_options(cfg: GrpcConfig) -> list[tuple[str, int]]:
    """The grpc.server options for these limits (requests are checked here, replies in the interceptor)."""
    return [("grpc.max_receive_message_length", 2 * cfg.max_receive_message_bytes),
            ("grpc.max_send_message_length", -1)]


def _mib(size: int) -> str:
    return f"{size / (1024 * 1024):.1f} MiB"


class MessageLimitInterceptor(grpc.ServerInterceptor):
    def __init__(self, cfg: GrpcConfig):
        self.cfg = cfg

    def intercept_service(self, continuation, handler_call_details):
        handler = continuation(handler_call_details)
        if handler is None or handler.unary_unary is None:
            return handler
        method = handler_call_details.method.rsplit("/", 1)[-1]
        return handler._replace(unary_unary=self._behavior(handler.unary_unary, method),
                                request_deserializer=self._deserializer(handler.request_deserializer))

    def _deserializer(self, parse):
        limit = self.cfg.max_receive_message_bytes

        def deserialize(data: bytes):
            if len(data) > limit:
                return _Oversized(len(data))
            return parse(data) if parse is not None else data

        return deserialize

    def _behavior(self, behavior, method: str):
        cfg = self.cfg

        def handle(request, context: grpc.ServicerContext):
            if isinstance(request, _Oversized):
                context.abort(grpc.StatusCode.RESOURCE_EXHAUSTED,
                              f"the {method} request is {request.size} bytes ({_mib(request.size)}), over the "
                              f"server's limit of {cfg.max_receive_message_bytes} bytes: raise "
                              f"grpc.max_receive_message_bytes in the flytelite config, or pass large data "
                              f"as a file (FlyteFile) instead of an inline value")
            response = behavior(request, context)
            size = response.ByteSize() if hasattr(response, "ByteSize") else 0
            if size > cfg.max_send_message_bytes:
                context.abort(grpc.StatusCode.RESOURCE_EXHAUSTED,
                              f"the {method} reply would be {size} bytes ({_mib(size)}), over the server's "
                              f"limit of {cfg.max_send_message_bytes} bytes: raise grpc.max_send_message_bytes "
                              f"in the flytelite config (flytekit itself reads at most 20 MiB per reply)")
            return response

        return handle
