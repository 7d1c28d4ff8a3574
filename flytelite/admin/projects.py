"""TODO: being written."""

from flytelite.context import Context


class ProjectsApi:
    ctx: Context
