"""OpenTelemetry traces, off unless the configuration's `tracing` section turns them on.

Spans: each gRPC call (its parent the caller's W3C `traceparent` metadata, when it sends one), each HTTP
request, each engine round of an execution, each task a plugin launches (a process, a Kubernetes object,
an agent's task), and within those the database's statements and the blob store's reads and writes. An
execution keeps the trace context of the request that created it (ExecutionSpec.traceparent), so its rounds
and task launches are spans of the caller's trace; a task process or pod gets it as TRACEPARENT in its
environment, an agent as the call's traceparent metadata, for their own instrumentation to continue. Spans
go over OTLP/HTTP (protobuf) or OTLP/gRPC to `tracing.endpoint`, sampled as Flyte's otelutils samples them:
parent-based, at `sampler_ratio` for traces started here.

Off, every call here is a no-op costing a branch: the engine and the API look no different.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from typing import Any

from flytelite.config import TracingConfig

TRACEPARENT = "traceparent"


class Tracing:
    def __init__(self, config: TracingConfig | None = None):
        self.enabled = bool(config is not None and config.enabled)
        self._provider = None
        if not self.enabled:
            return
        assert config is not None
        from opentelemetry.sdk.resources import Resource
        from opentelemetry.sdk.trace import TracerProvider
        from opentelemetry.sdk.trace.export import BatchSpanProcessor
        from opentelemetry.sdk.trace.sampling import ParentBased, TraceIdRatioBased
        from opentelemetry.trace.propagation.tracecontext import TraceContextTextMapPropagator

        self._provider = TracerProvider(resource=Resource.create({"service.name": config.service_name}),
                                        sampler=ParentBased(TraceIdRatioBased(config.sampler_ratio)))
        self._provider.add_span_processor(BatchSpanProcessor(_exporter(config), schedule_delay_millis=500))
        self._tracer = self._provider.get_tracer("flytelite")
        self._propagator = TraceContextTextMapPropagator()

    @contextmanager
    def span(self, name: str, *, parent: str | Mapping[str, str] | None = None, server: bool = False,
             attributes: dict[str, Any] | None = None) -> Iterator[Any]:
        """A span around the block (None when tracing is off). `parent`: a traceparent header value or a
        carrier of W3C headers; without one, the current span is the parent."""
        if not self.enabled:
            yield None
            return
        from opentelemetry.trace import SpanKind

        context = None
        if parent:
            carrier = {TRACEPARENT: parent} if isinstance(parent, str) else dict(parent)
            context = self._propagator.extract(carrier)
        kind = SpanKind.SERVER if server else SpanKind.INTERNAL
        with self._tracer.start_as_current_span(name, context=context, kind=kind,
                                                attributes=attributes or {}) as span:
            yield span

    def start_child(self, name: str, attributes: dict[str, Any]) -> Any:
        """A client span, child of the current one, that the caller ends (`end()`); None when tracing is off or
        no span is current: a statement or blob call outside a request or round starts no trace of its own."""
        if not self.enabled:
            return None
        from opentelemetry import trace
        from opentelemetry.trace import SpanKind

        if not trace.get_current_span().get_span_context().is_valid:
            return None
        return self._tracer.start_span(name, kind=SpanKind.CLIENT, attributes=attributes)

    def traceparent(self) -> str:
        """The current span's W3C traceparent ("" when tracing is off or no span is current)."""
        if not self.enabled:
            return ""
        carrier: dict[str, str] = {}
        self._propagator.inject(carrier)
        return carrier.get(TRACEPARENT, "")

    def shutdown(self) -> None:
        """Send what is buffered and stop."""
        if self._provider is not None:
            self._provider.shutdown()


def _exporter(config: TracingConfig) -> Any:
    if config.protocol == "grpc":
        from opentelemetry.exporter.otlp.proto.grpc.trace_exporter import OTLPSpanExporter as GrpcExporter

        return GrpcExporter(endpoint=config.collector, insecure=config.collector.startswith("http://"))
    from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter as HttpExporter

    return HttpExporter(endpoint=config.collector)
