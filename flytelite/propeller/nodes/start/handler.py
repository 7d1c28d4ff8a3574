"""The start node: its outputs are the workflow's inputs (copied to `<wfdir>/start-node/data/0/outputs.pb`)."""

from __future__ import annotations

from flyteidl.core import literals_pb2

from flytelite.propeller.nodes.handler import NodeExecutionContext, NodeHandler, PhaseInfo


class StartHandler(NodeHandler):
    kind = "start"

    def handle(self, nctx: NodeExecutionContext) -> PhaseInfo:
        blobs = nctx.blobs
        # The scope's inputs: the workflow's at the top level, a subworkflow node's own inputs when nested.
        uri = nctx.scope.inputs_uri if nctx.scope is not None else nctx.round.spec.inputs_uri
        inputs = blobs.read_proto(uri, literals_pb2.LiteralMap) if uri else literals_pb2.LiteralMap()
        blobs.write_proto(nctx.outputs_uri, inputs)
        return PhaseInfo.success(output_uri=nctx.outputs_uri)
