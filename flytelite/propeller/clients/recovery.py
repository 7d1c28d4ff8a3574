"""The engine's seam for recovering nodes from an earlier execution (FlytePropeller's nodes/recovery.Client).

Recovery (flytelite.propeller.nodes.recovery) asks how the original execution's run of a node ended; the
answer is admin's record of that node execution (its closure and input URI). Node data is read
from the blob store by the URIs it names, so RecoverNodeExecutionData has no counterpart here.
"""

from __future__ import annotations

from typing import Protocol

from flyteidl.admin import node_execution_pb2
from flyteidl.core import identifier_pb2


class Client(Protocol):
    def recover_node_execution(self, execution_id: identifier_pb2.WorkflowExecutionIdentifier, node_id: str,
                               ) -> node_execution_pb2.NodeExecution | None:
        """The original execution's node execution `node_id`, or None when it never ran that node."""
