"""TODO: being written."""

from flytelite.context import Context


class TaskExecutionsApi:
    ctx: Context
