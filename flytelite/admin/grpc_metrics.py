"""FlyteAdmin's per-RPC metrics for every gRPC call: its duration, and its status code counted (flytelite/metrics.py);
and a span for each call when tracing is on (flytelite/tracing.py)."""

from __future__ import annotations

import time

import grpc

from flytelite.metrics import Metrics, rpc_prefix
from flytelite.tracing import Tracing


class MetricsInterceptor(grpc.ServerInterceptor):
    """The outermost interceptor: calls refused by authentication or by a limit are counted too."""

    def __init__(self, metrics: Metrics):
        self.metrics = metrics

    def intercept_service(self, continuation, handler_call_details):
        handler = continuation(handler_call_details)
        if handler is None or handler.unary_unary is None:
            return handler
        prefix = rpc_prefix(handler_call_details.method)
        behavior, metrics = handler.unary_unary, self.metrics

        def measured(request, context: grpc.ServicerContext):
            start = time.perf_counter()
            try:
                return behavior(request, context)
            finally:
                metrics.record_rpc(prefix, _status(context).name, (time.perf_counter() - start) * 1000.0)

        return handler._replace(unary_unary=measured)


class TracingInterceptor(grpc.ServerInterceptor):
    """A server span per call, child of the caller's span when its metadata carries W3C trace context."""

    def __init__(self, tracing: Tracing):
        self.tracing = tracing

    def intercept_service(self, continuation, handler_call_details):
        handler = continuation(handler_call_details)
        if handler is None or handler.unary_unary is None:
            return handler
        method = handler_call_details.method.lstrip("/")
        carrier = {k: v for k, v in (handler_call_details.invocation_metadata or ())
                   if k in ("traceparent", "tracestate") and isinstance(v, str)}
        behavior, tracing = handler.unary_unary, self.tracing

        def traced(request, context: grpc.ServicerContext):
            with tracing.span(method, parent=carrier or None, server=True,
                              attributes={"rpc.system": "grpc", "rpc.method": method}) as span:
                try:
                    return behavior(request, context)
                finally:
                    span.set_attribute("rpc.grpc.status_code", _status(context).value[0])

        return handler._replace(unary_unary=traced)


def _status(context: grpc.ServicerContext) -> grpc.StatusCode:
    """The call's status code once it answered: OK unless a handler or an abort set another."""
    # code() (grpc 1.38+) is not in types-grpcio.
    return context.code() or grpc.StatusCode.OK  # type: ignore[attr-defined]
