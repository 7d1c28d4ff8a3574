"""AdminService: FlyteAdmin's gRPC API, composed from one mixin per entity family.

RPCs no mixin defines answer UNIMPLEMENTED with a message naming them.
"""

from __future__ import annotations

from flyteidl.service import admin_pb2_grpc

from flytelite.admin.attributes import AttributesApi
from flytelite.admin.descriptions import DescriptionEntitiesApi
from flytelite.admin.exec_data import ExecutionData
from flytelite.admin.executions import ExecutionsApi
from flytelite.admin.grpc_errors import fill_unimplemented
from flytelite.admin.launch_plans import LaunchPlansApi
from flytelite.admin.metrics import ExecutionMetricsApi
from flytelite.admin.named_entities import NamedEntitiesApi
from flytelite.admin.node_executions import NodeExecutionsApi
from flytelite.admin.projects import ProjectsApi
from flytelite.admin.read_cache import ReadCache
from flytelite.admin.task_executions import TaskExecutionsApi
from flytelite.admin.tasks import TasksApi
from flytelite.admin.version import VersionApi
from flytelite.admin.workflows import WorkflowsApi
from flytelite.context import Context
from flytelite.errors import Unimplemented

# How long an answer about a finished node or task execution is given again (see read_cache.py).
READ_CACHE_SECONDS = 30.0


class AdminService(
    ProjectsApi,
    TasksApi,
    WorkflowsApi,
    LaunchPlansApi,
    NamedEntitiesApi,
    ExecutionsApi,
    NodeExecutionsApi,
    TaskExecutionsApi,
    DescriptionEntitiesApi,
    AttributesApi,
    ExecutionMetricsApi,
    VersionApi,
    admin_pb2_grpc.AdminServiceServicer,
):
    def __init__(self, ctx: Context):
        self.ctx = ctx
        self.data = ExecutionData(ctx)
        # Kept for less than half a signed link's life: an answer's links stay valid for as long again.
        self.reads = ReadCache(seconds=min(READ_CACHE_SECONDS, ctx.config.remote_data.signed_url_seconds / 2))


def _engine_internal(rpc: str):
    """An event RPC: FlytePropeller sends these to FlyteAdmin; flytelite's engine records its events itself."""

    def refuse(self, request, context=None):
        raise Unimplemented(f"{rpc} is not served: flytelite's engine runs inside the server and records its "
                            "events itself, so no outside FlytePropeller sends them; read executions with the "
                            "Get*/List* RPCs")

    refuse.__name__ = rpc
    return refuse


for _rpc in ("CreateWorkflowEvent", "CreateNodeEvent", "CreateTaskEvent"):
    setattr(AdminService, _rpc, _engine_internal(_rpc))
fill_unimplemented(AdminService, admin_pb2_grpc.AdminServiceServicer)
