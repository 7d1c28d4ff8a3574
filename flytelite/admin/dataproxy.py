"""DataProxyService. TODO: being written."""

from flyteidl.service import dataproxy_pb2_grpc

from flytelite.admin.grpc_errors import fill_unimplemented
from flytelite.context import Context


class DataProxyService(dataproxy_pb2_grpc.DataProxyServiceServicer):
    def __init__(self, ctx: Context):
        self.ctx = ctx


fill_unimplemented(DataProxyService, dataproxy_pb2_grpc.DataProxyServiceServicer)
