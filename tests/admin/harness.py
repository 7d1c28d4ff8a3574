"""A real AdminService in this process (real SQLite file and blob folder, real gRPC server, with the
DataProxyService and SignalService beside it as the server has them) and ways to reach it: a plain gRPC
stub for exact codes and messages, flytekit's client and FlyteRemote."""

from __future__ import annotations

from collections import OrderedDict
from concurrent import futures

import grpc
import pytest
from flyteidl.admin import launch_plan_pb2, task_pb2, workflow_pb2
from flyteidl.core import identifier_pb2 as idpb
from flyteidl.core import workflow_pb2 as core_workflow_pb2
from flyteidl.service import admin_pb2_grpc
from flytekit import LaunchPlan
from flytekit.clients.friendly import SynchronousFlyteClient
from flytekit.configuration import Config, ImageConfig, PlatformConfig, SerializationSettings
from flytekit.core.context_manager import FlyteContextManager
from flytekit.core.workflow import WorkflowBase
from flytekit.remote import FlyteRemote
from flytekit.tools.translator import get_serializable

from flytelite.admin.grpc_errors import ErrorInterceptor
from flytelite.admin.grpc_services import GRPC_SERVICES
from flytelite.config import Config as FlyteliteConfig
from flytelite.server.app import build_context
from flytelite.testing import database_url_for

P, D = "flytesnacks", "development"


def start_admin(tmp_path):
    """Yields an Admin over a fresh home; the fixture in conftest.py drives it."""
    ctx = build_context(FlyteliteConfig(home=tmp_path / "home", database_url=database_url_for(tmp_path / "home")))
    server = grpc.server(futures.ThreadPoolExecutor(max_workers=8), interceptors=[ErrorInterceptor()])
    for service in GRPC_SERVICES:
        service.add_to_server(service.servicer(ctx), server)
    port = server.add_insecure_port("127.0.0.1:0")
    server.start()
    channel = grpc.insecure_channel(f"127.0.0.1:{port}")
    yield Admin(ctx, admin_pb2_grpc.AdminServiceStub(channel), f"localhost:{port}", channel)
    channel.close()
    server.stop(0)
    ctx.db.dispose()


class Admin:
    def __init__(self, ctx, stub, endpoint, channel=None):
        self.ctx, self.stub, self.endpoint, self.channel = ctx, stub, endpoint, channel
        self.client = SynchronousFlyteClient(PlatformConfig(endpoint=endpoint, insecure=True))

    def remote(self) -> FlyteRemote:
        return FlyteRemote(Config.for_endpoint(self.endpoint, insecure=True), default_project=P, default_domain=D)

    def register(self, entity, version: str, project: str = P, domain: str = D) -> None:
        """Register an entity and everything it uses, in flytekit's order, as pyflyte register does
        (which adds a workflow's default launch plan)."""
        entities = serialize(entity, version, project, domain)
        if isinstance(entity, WorkflowBase):
            default = LaunchPlan.get_default_launch_plan(FlyteContextManager.current_context(), entity)
            entities.update(serialize(default, version, project, domain))
        for cp in entities.values():
            pb = cp.to_flyte_idl()
            if isinstance(pb, task_pb2.TaskSpec):
                self.stub.CreateTask(task_pb2.TaskCreateRequest(id=pb.template.id, spec=pb))
            elif isinstance(pb, workflow_pb2.WorkflowSpec):
                self.stub.CreateWorkflow(workflow_pb2.WorkflowCreateRequest(id=pb.template.id, spec=pb))
            elif isinstance(pb, launch_plan_pb2.LaunchPlan):
                self.stub.CreateLaunchPlan(launch_plan_pb2.LaunchPlanCreateRequest(id=pb.id, spec=pb.spec))


def serialize(entity, version: str, project: str = P, domain: str = D) -> OrderedDict:
    settings = SerializationSettings(image_config=ImageConfig.auto_default_image(), project=project, domain=domain,
                                     version=version)
    entities: OrderedDict = OrderedDict()
    get_serializable(entities, settings, entity)
    return entities


def spec_of(entity, version: str, project: str = P, domain: str = D):
    return serialize(entity, version, project, domain)[entity].to_flyte_idl()


def task_id(name: str, version: str, project: str = P, domain: str = D) -> idpb.Identifier:
    return idpb.Identifier(resource_type=idpb.TASK, project=project, domain=domain, name=name, version=version)


def rpc_error(call, *args) -> grpc.RpcError:
    with pytest.raises(grpc.RpcError) as info:
        call(*args)
    return info.value


def lp_id(name: str, version: str) -> idpb.Identifier:
    return idpb.Identifier(resource_type=idpb.LAUNCH_PLAN, project=P, domain=D, name=name, version=version)


def reorder_upstreams(spec: workflow_pb2.WorkflowSpec, descending: bool = False) -> workflow_pb2.WorkflowSpec:
    """A copy of a workflow spec with every node's upstream_node_ids (at any depth) sorted, descending if
    asked, and its subworkflows reversed when descending: the orderings a flytekit process may vary."""
    out = workflow_pb2.WorkflowSpec()
    out.CopyFrom(spec)
    _reorder(out, descending)
    if descending:
        subs = list(out.sub_workflows)[::-1]
        del out.sub_workflows[:]
        out.sub_workflows.extend(subs)
    return out


def _reorder(msg, descending: bool) -> None:
    if isinstance(msg, core_workflow_pb2.Node):
        ids = sorted(msg.upstream_node_ids, reverse=descending)
        del msg.upstream_node_ids[:]
        msg.upstream_node_ids.extend(ids)
    for field, value in msg.ListFields():
        if field.message_type is None or field.message_type.GetOptions().map_entry:
            continue
        for item in (value if field.is_repeated else [value]):
            _reorder(item, descending)
