"""TODO: being written."""

from flytelite.context import Context


class WorkflowsApi:
    ctx: Context
