"""OTLP receivers for tests of traces: real OTLP/HTTP and OTLP/gRPC endpoints decoding opentelemetry-proto's
ExportTraceServiceRequest and keeping every span they are sent."""

from __future__ import annotations

import threading
from concurrent import futures
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import grpc
from opentelemetry.proto.collector.trace.v1 import trace_service_pb2, trace_service_pb2_grpc

from flytelite.testing import free_port


class Receiver:
    """An OTLP/HTTP traces endpoint keeping every span it is sent."""

    def __init__(self) -> None:
        self.spans: list = []
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802 - http.server's name
                body = self.rfile.read(int(self.headers["Content-Length"]))
                request = trace_service_pb2.ExportTraceServiceRequest.FromString(body)
                receiver.spans += [span for rs in request.resource_spans for ss in rs.scope_spans
                                   for span in ss.spans]
                reply = trace_service_pb2.ExportTraceServiceResponse().SerializeToString()
                self.send_response(200)
                self.send_header("Content-Type", "application/x-protobuf")
                self.send_header("Content-Length", str(len(reply)))
                self.end_headers()
                self.wfile.write(reply)

            def log_message(self, *_args) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", free_port()), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/v1/traces"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def named(self, name: str) -> list:
        return [s for s in self.spans if s.name == name]

    def stop(self) -> None:
        self.server.shutdown()


class GrpcReceiver(Receiver, trace_service_pb2_grpc.TraceServiceServicer):
    """An OTLP/gRPC traces endpoint keeping every span it is sent."""

    def __init__(self) -> None:
        self.spans = []
        self.server = grpc.server(futures.ThreadPoolExecutor(max_workers=2))
        trace_service_pb2_grpc.add_TraceServiceServicer_to_server(self, self.server)
        port = self.server.add_insecure_port("127.0.0.1:0")
        self.server.start()
        self.url = f"http://127.0.0.1:{port}"

    def Export(self, request, context):  # noqa: N802 - the service's method name
        self.spans += [span for rs in request.resource_spans for ss in rs.scope_spans for span in ss.spans]
        return trace_service_pb2.ExportTraceServiceResponse()

    def stop(self) -> None:
        self.server.stop(None)


def descendants(spans: list, root) -> list:
    """The spans below `root` in its trace."""
    below, frontier = [], {root.span_id}
    while frontier:
        children = [s for s in spans if s.trace_id == root.trace_id and s.parent_span_id in frontier]
        below += children
        frontier = {s.span_id for s in children}
    return below
