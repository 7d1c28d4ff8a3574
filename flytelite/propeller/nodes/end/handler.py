"""The end node: its resolved inputs are the workflow's outputs, stored as its own outputs.pb."""

from __future__ import annotations

from flyteidl.core import literals_pb2

from flytelite.propeller.nodes.handler import NodeExecutionContext, NodeHandler, PhaseInfo


class EndHandler(NodeHandler):
    kind = "end"

    def handle(self, nctx: NodeExecutionContext) -> PhaseInfo:
        blobs = nctx.blobs
        inputs = blobs.read_proto_if_exists(nctx.input_uri, literals_pb2.LiteralMap) or literals_pb2.LiteralMap()
        blobs.write_proto(nctx.outputs_uri, inputs)
        # As in FlytePropeller, the end node's event carries no outputs; the workflow event does.
        return PhaseInfo.success()
