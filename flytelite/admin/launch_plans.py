"""TODO: being written."""

from flytelite.context import Context


class LaunchPlansApi:
    ctx: Context
