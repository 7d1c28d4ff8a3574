"""The engine's seam for reading registered tasks.

FlytePropeller has no such reader: it requires a dynamic task's DynamicJobSpec to carry every task
it calls. flytelite also accepts a spec that names a task registered with admin and reads it here.
"""

from __future__ import annotations

from typing import Protocol

from flyteidl.admin import task_pb2
from flyteidl.core import identifier_pb2


class Reader(Protocol):
    def get_task(self, task: identifier_pb2.Identifier) -> task_pb2.Task | None:
        """The registered task (its closure holds the compiled task), or None when it is not registered."""
