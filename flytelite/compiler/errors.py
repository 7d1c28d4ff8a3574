"""Compile errors: Flyte's error codes, the issue record and the exception the compiler raises.

The codes are exactly the strings of flytepropeller's compiler (errors/compiler_errors.go) so that
clients, logs and tests can match on them. Messages are ours and aim to tell a user what to change.
Issues are collected in scopes (like propeller does) so a validator can ask "did *my* check fail?"
while every issue still lands in one deduplicated, sorted list.
"""

from __future__ import annotations

from dataclasses import dataclass

# --- Flyte's error codes (all of them, spelled as Flyte spells them) ---
CYCLE_DETECTED = "CycleDetected"
BRANCH_NODE_ID_NOT_FOUND = "BranchNodeIdNotFound"
BRANCH_NODE_HAS_NO_CONDITION = "BranchNodeHasNoCondition"
BRANCH_NODE_HAS_NO_DEFAULT = "BranchNodeHasNoDefault"
VALUE_REQUIRED = "ValueRequired"
INVALID_VALUE = "InvalidValue"
NODE_REFERENCE_NOT_FOUND = "NodeReferenceNotFound"
TASK_REFERENCE_NOT_FOUND = "TaskReferenceNotFound"
WORKFLOW_REFERENCE_NOT_FOUND = "WorkflowReferenceNotFound"
VARIABLE_NAME_NOT_FOUND = "VariableNameNotFound"
DUPLICATE_ALIAS = "DuplicateAlias"
DUPLICATE_ID = "DuplicateId"
MISMATCHING_TYPES = "MismatchingTypes"
MISMATCHING_BINDINGS = "MismatchingBindings"
MISMATCHING_INTERFACES = "MismatchingInterfaces"
INCONSISTENT_TYPES = "InconsistentTypes"
PARAMETER_BOUND_MORE_THAN_ONCE = "ParameterBoundMoreThanOnce"
PARAMETER_NOT_BOUND = "ParameterNotBound"
NO_ENTRY_NODE_FOUND = "NoEntryNodeFound"
UNREACHABLE_NODES = "UnreachableNodes"
UNRECOGNIZED_VALUE = "UnrecognizedValue"
WORKFLOW_BUILD_ERROR = "WorkflowBuildError"
VALUE_COLLISION = "ValueCollision"
SYNTAX_ERROR = "SyntaxError"
NO_NODES_FOUND = "NoNodesFound"
ILLEGAL_ENUM_VALUE = "IllegalEnumValue"
AMBIGUOUS_BINDING_UNION_VALUE = "AmbiguousBindingUnionValue"
INCOMPATIBLE_BINDING_UNION_VALUE = "IncompatibleBindingUnionValue"
NO_CONDITION_FOUND = "NoConditionFound"
FIELD_NOT_FOUND = "FieldNotFound"
INVALID_LITERAL_TYPE = "InvalidLiteralType"

ALL_CODES = (
    CYCLE_DETECTED, BRANCH_NODE_ID_NOT_FOUND, BRANCH_NODE_HAS_NO_CONDITION, BRANCH_NODE_HAS_NO_DEFAULT,
    VALUE_REQUIRED, INVALID_VALUE, NODE_REFERENCE_NOT_FOUND, TASK_REFERENCE_NOT_FOUND,
    WORKFLOW_REFERENCE_NOT_FOUND, VARIABLE_NAME_NOT_FOUND, DUPLICATE_ALIAS, DUPLICATE_ID, MISMATCHING_TYPES,
    MISMATCHING_BINDINGS, MISMATCHING_INTERFACES, INCONSISTENT_TYPES, PARAMETER_BOUND_MORE_THAN_ONCE,
    PARAMETER_NOT_BOUND, NO_ENTRY_NODE_FOUND, UNREACHABLE_NODES, UNRECOGNIZED_VALUE, WORKFLOW_BUILD_ERROR,
    VALUE_COLLISION, SYNTAX_ERROR, NO_NODES_FOUND, ILLEGAL_ENUM_VALUE, AMBIGUOUS_BINDING_UNION_VALUE,
    INCOMPATIBLE_BINDING_UNION_VALUE, NO_CONDITION_FOUND, FIELD_NOT_FOUND, INVALID_LITERAL_TYPE,
)


@dataclass(frozen=True)
class CompilerIssue:
    """One problem found by the compiler: Flyte's code, the node it is about and what to do."""

    code: str
    node_id: str
    message: str

    def __str__(self) -> str:
        return f"{self.code}: [node {self.node_id}] {self.message}"


class CompileError(Exception):
    """Raised when a task or workflow does not compile; ``errors`` holds every issue found."""

    def __init__(self, errors: list[CompilerIssue]):
        self.errors = list(errors)
        super().__init__("\n".join(str(e) for e in self.errors))

    def __str__(self) -> str:
        return "\n".join(str(e) for e in self.errors)

    @property
    def codes(self) -> list[str]:
        return [e.code for e in self.errors]


class Errors:
    """A scope of collected issues.

    A child scope forwards every issue to its parent and remembers how many it saw, so validators can
    bail out on their own failures only (propeller's CompileErrors.NewScope). A detached root
    (``Errors()``) is used for trial validations whose issues must be dropped.
    """

    def __init__(self, parent: Errors | None = None):
        self._parent = parent
        self._issues: dict[CompilerIssue, None] = {}
        self.count = 0

    def scope(self) -> Errors:
        return Errors(self)

    def add(self, code: str, node_id: str, message: str) -> None:
        self._collect(CompilerIssue(code, node_id, message))

    def _collect(self, issue: CompilerIssue) -> None:
        self.count += 1
        if self._parent is not None:
            self._parent._collect(issue)
        else:
            self._issues[issue] = None

    @property
    def has_errors(self) -> bool:
        return self.count > 0

    @property
    def ok(self) -> bool:
        return self.count == 0

    def issues(self) -> list[CompilerIssue]:
        root = self
        while root._parent is not None:
            root = root._parent
        # Same order as Flyte: by code, then by the rendered text; duplicates collapse.
        return sorted(root._issues, key=lambda i: (i.code, str(i)))

    def raise_if_any(self) -> None:
        if self.has_errors:
            raise CompileError(self.issues())
