"""The Flyte workflow compiler: pure validation and compilation of tasks and workflows.

``compile_task`` and ``compile_workflow`` follow flytepropeller's compiler (same checks, same error
codes, same compiled output); ``literal_type_castable`` and ``literal_matches_type`` expose its type
rules for reuse by the admin (input validation) and the engine.
"""

from flytelite.compiler.errors import ALL_CODES, CompileError, CompilerIssue
from flytelite.compiler.literals import literal_matches_type, literal_type_for_literal
from flytelite.compiler.requirements import Requirements, get_requirements
from flytelite.compiler.task import compile_task
from flytelite.compiler.types import literal_type_castable, type_to_str
from flytelite.compiler.workflow import compile_workflow

__all__ = [
    "ALL_CODES",
    "CompileError",
    "CompilerIssue",
    "Requirements",
    "compile_task",
    "compile_workflow",
    "get_requirements",
    "literal_matches_type",
    "literal_type_castable",
    "literal_type_for_literal",
    "type_to_str",
]
