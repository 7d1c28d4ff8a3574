"""TODO: being written."""

from flytelite.context import Context


class ExecutionsApi:
    ctx: Context
