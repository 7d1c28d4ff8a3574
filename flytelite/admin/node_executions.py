"""TODO: being written."""

from flytelite.context import Context


class NodeExecutionsApi:
    ctx: Context
