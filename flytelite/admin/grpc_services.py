"""The gRPC services flytelite serves, listed once: the server registers them, the REST API and the console
call the same servicers in-process, and the fuzz test enumerates their RPCs from here."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from flyteidl.service import (
    admin_pb2,
    admin_pb2_grpc,
    dataproxy_pb2,
    dataproxy_pb2_grpc,
    identity_pb2,
    identity_pb2_grpc,
    signal_pb2,
    signal_pb2_grpc,
)
from google.protobuf.descriptor import ServiceDescriptor

from flytelite.admin.dataproxy import DataProxyService
from flytelite.admin.identity import IdentityService
from flytelite.admin.service import AdminService
from flytelite.admin.signals import SignalService
from flytelite.context import Context


@dataclass(frozen=True)
class GrpcService:
    """One flyteidl service: its descriptor (RPCs, HTTP bindings), servicer and grpc registration function."""

    descriptor: ServiceDescriptor
    servicer: Callable[[Context], object]
    add_to_server: Callable[[object, object], None]

    @property
    def name(self) -> str:
        return self.descriptor.name


GRPC_SERVICES = (
    GrpcService(admin_pb2.DESCRIPTOR.services_by_name["AdminService"], AdminService,
                admin_pb2_grpc.add_AdminServiceServicer_to_server),
    GrpcService(dataproxy_pb2.DESCRIPTOR.services_by_name["DataProxyService"], DataProxyService,
                dataproxy_pb2_grpc.add_DataProxyServiceServicer_to_server),
    GrpcService(signal_pb2.DESCRIPTOR.services_by_name["SignalService"], SignalService,
                signal_pb2_grpc.add_SignalServiceServicer_to_server),
    GrpcService(identity_pb2.DESCRIPTOR.services_by_name["IdentityService"], IdentityService,
                identity_pb2_grpc.add_IdentityServiceServicer_to_server),
)


def servicers(ctx: Context) -> dict[str, object]:
    """One servicer of each service over `ctx`, by service name (AdminService, ...)."""
    return {service.name: service.servicer(ctx) for service in GRPC_SERVICES}
