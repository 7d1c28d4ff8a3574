"""A gRPC client of one agent deployment over flyteidl's AgentService (FlytePropeller's agent client.go):
AsyncAgentService CreateTask / GetTask / DeleteTask, SyncAgentService ExecuteTaskSync and
AgentMetadataService ListAgents, each with the deployment's deadline for that operation.

Failures come back as AgentCallFailed naming the endpoint, the RPC and the status; it never retries.
"""

from __future__ import annotations

import threading

import grpc
from flyteidl.admin import agent_pb2
from flyteidl.core import literals_pb2
from flyteidl.service import agent_pb2_grpc

from flytelite.config.agents import AgentDeployment


class AgentCallFailed(Exception):
    def __init__(self, endpoint: str, operation: str, error: grpc.RpcError | str):
        code = error.code() if isinstance(error, grpc.RpcError) else None
        details = error.details() if isinstance(error, grpc.RpcError) else error
        self.code = code
        super().__init__(f"{operation} on agent {endpoint} failed"
                         f"{f' with {code.name}' if code else ''}: {details}")


class AgentClient:
    def __init__(self, deployment: AgentDeployment):
        self.deployment = deployment
        endpoint = deployment.endpoint
        if deployment.insecure:
            self.channel = grpc.insecure_channel(endpoint)
        else:
            self.channel = grpc.secure_channel(endpoint, grpc.ssl_channel_credentials())
        self.async_stub = agent_pb2_grpc.AsyncAgentServiceStub(self.channel)
        self.sync_stub = agent_pb2_grpc.SyncAgentServiceStub(self.channel)
        self.metadata_stub = agent_pb2_grpc.AgentMetadataServiceStub(self.channel)

    @property
    def endpoint(self) -> str:
        return self.deployment.endpoint

    def _call(self, operation: str, method, request, wait_for_ready: bool = False, traceparent: str = ""):
        try:
            return method(request, timeout=self.deployment.timeout(operation), wait_for_ready=wait_for_ready,
                          metadata=_trace_metadata(traceparent))
        except grpc.RpcError as e:
            raise AgentCallFailed(self.endpoint, operation, e) from None

    def list_agents(self, wait_for_ready: bool = False) -> list[agent_pb2.Agent]:
        return list(self._call("ListAgents", self.metadata_stub.ListAgents, agent_pb2.ListAgentsRequest(),
                               wait_for_ready).agents)

    def create(self, request: agent_pb2.CreateTaskRequest, traceparent: str = "") -> bytes:
        """The agent's resource meta; `traceparent` (W3C) goes as call metadata, continuing the caller's trace."""
        return self._call("CreateTask", self.async_stub.CreateTask, request, traceparent=traceparent).resource_meta

    def get(self, request: agent_pb2.GetTaskRequest) -> agent_pb2.Resource:
        return self._call("GetTask", self.async_stub.GetTask, request).resource

    def delete(self, request: agent_pb2.DeleteTaskRequest) -> None:
        self._call("DeleteTask", self.async_stub.DeleteTask, request)

    def execute_sync(self, header: agent_pb2.CreateRequestHeader, inputs: literals_pb2.LiteralMap,
                     traceparent: str = "") -> agent_pb2.Resource:
        """The header, then the inputs; the answer is in the first response's header (as FlytePropeller
        reads it, ignoring any streamed outputs after it)."""
        requests = iter([agent_pb2.ExecuteTaskSyncRequest(header=header),
                         agent_pb2.ExecuteTaskSyncRequest(inputs=inputs)])
        try:
            responses = self.sync_stub.ExecuteTaskSync(requests, timeout=self.deployment.timeout("ExecuteTaskSync"),
                                                       metadata=_trace_metadata(traceparent))
            first = next(responses, None)
            responses.cancel()
        except grpc.RpcError as e:
            raise AgentCallFailed(self.endpoint, "ExecuteTaskSync", e) from None
        if first is None or not first.HasField("header"):
            raise AgentCallFailed(self.endpoint, "ExecuteTaskSync", "expected a header in the first response, "
                                  "got none")
        return first.header.resource

    def close(self) -> None:
        self.channel.close()


def _trace_metadata(traceparent: str) -> tuple[tuple[str, str], ...] | None:
    return (("traceparent", traceparent),) if traceparent else None


class AgentClients:
    """One client per endpoint, made on first use (FlytePropeller's ClientSet)."""

    def __init__(self):
        self._lock = threading.Lock()
        self._clients: dict[tuple[str, bool], AgentClient] = {}

    def get(self, deployment: AgentDeployment) -> AgentClient:
        key = (deployment.endpoint, deployment.insecure)
        with self._lock:
            client = self._clients.get(key)
            if client is None or client.deployment is not deployment:
                if client is not None:
                    client.close()
                client = self._clients[key] = AgentClient(deployment)
            return client

    def close(self) -> None:
        with self._lock:
            clients, self._clients = list(self._clients.values()), {}
        for client in clients:
            client.close()
