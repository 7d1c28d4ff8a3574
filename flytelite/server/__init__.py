"""The composition root: reads config, wires every component, starts and stops them."""

from flytelite.server.app import FlyteliteServer

__all__ = ["FlyteliteServer"]
