"""TODO: being written."""

from flytelite.context import Context


class TasksApi:
    ctx: Context
