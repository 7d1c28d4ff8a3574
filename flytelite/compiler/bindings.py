"""Bindings: check every node input is bound to a compatible value and record the edges they imply.

A binding is a literal scalar, a promise (another node's output, optionally indexed ``[i].var`` or
reached through an ``attr_path`` into lists, maps and dataclasses), or a list/map of bindings.
Promises to missing nodes or variables, type mismatches, unbound required inputs and inputs bound
twice are reported with Flyte's codes. A list/map binding to a union input must fit exactly one
variant (else AmbiguousBindingUnionValue / IncompatibleBindingUnionValue); scalars and promises go
through the union-aware castability rules instead.
"""

from __future__ import annotations

import enum
import re
from collections.abc import Iterable

from flyteidl.core import interface_pb2, literals_pb2, types_pb2

from flytelite.compiler import errors as E
from flytelite.compiler.builder import NodeBuilder, WorkflowBuilder
from flytelite.compiler.literals import literal_type_for_scalar
from flytelite.compiler.types import is_optional, literal_type_castable, type_to_str
from flytelite.idl.ids import START_NODE

LiteralType = types_pb2.LiteralType


class EdgeDirection(enum.Enum):
    BIDIRECTIONAL = 0
    DOWNSTREAM = 1
    UPSTREAM = 2


# "[2].var" selects an element of a list output; plain "var" the whole output.
_VAR_RE = re.compile(r"(\[(?P<index>\d+)\]\.)?(?P<var>\w+)", re.ASCII)


def parse_var_name(name: str) -> tuple[str, int | None]:
    matches = list(_VAR_RE.finditer(name))
    if len(matches) != 1:
        raise ValueError(f"expected one variable reference, found {len(matches)}")
    m = matches[0]
    return m.group("var"), (int(m.group("index")) if m.group("index") is not None else None)


def _label(n: NodeBuilder, var: str) -> str:
    # Users know nodes by their entity name (metadata.name), so messages use it when present.
    return f"{n.node.metadata.name}.{var}" if n.has_metadata else var


def _ok(resolved: LiteralType | None, ids: list[str], errs: E.Errors) -> tuple[LiteralType | None, list[str], bool]:
    return resolved, ids, errs.ok


def validate_binding(
    w: WorkflowBuilder,
    n: NodeBuilder,
    param: str,
    binding: literals_pb2.BindingData,
    expected: LiteralType,
    errs: E.Errors,
    check_types: bool,
) -> tuple[LiteralType | None, list[str], bool]:
    """Validate one binding against the expected type: (resolved type, upstream node ids, ok)."""
    kind = binding.WhichOneof("value")
    if kind not in ("scalar", "promise") and expected.WhichOneof("type") == "union_type":
        return _bind_container_to_union(w, n, param, binding, expected, errs, check_types)

    if kind in ("collection", "map"):
        elem_field = "collection_type" if kind == "collection" else "map_value_type"
        if expected.WhichOneof("type") != elem_field:
            errs.add(
                E.MISMATCHING_BINDINGS,
                n.id,
                f"Input [{param}] expects a value of type [{type_to_str(expected)}] but is bound to a "
                f"{'list' if kind == 'collection' else 'map'} of values.",
            )
            return _ok(None, [], errs)
        items = binding.collection.bindings if kind == "collection" else binding.map.bindings.values()
        ids: list[str] = []
        sub: LiteralType | None = None
        for item in items:
            resolved, item_ids, ok = validate_binding(
                w, n, param, item, getattr(expected, elem_field), errs.scope(), check_types
            )
            if ok:
                ids.extend(item_ids)
                sub = resolved
        out = LiteralType()
        getattr(out, elem_field).SetInParent()
        if sub is not None:
            getattr(out, elem_field).CopyFrom(sub)
        return _ok(out, ids, errs)

    if kind == "promise":
        return _bind_promise(w, n, param, binding.promise, expected, errs, check_types)

    if kind == "scalar":
        lt = literal_type_for_scalar(binding.scalar)
        if lt is None:
            errs.add(
                E.UNRECOGNIZED_VALUE,
                n.id,
                f"The value bound to input [{param}] is a {binding.scalar.WhichOneof('value') or 'empty'} "
                "scalar whose type cannot be determined.",
            )
        elif check_types and not literal_type_castable(lt, expected):
            errs.add(
                E.MISMATCHING_TYPES,
                n.id,
                f"Input [{param}] expects type [{type_to_str(expected)}] but is bound to a literal of type "
                f"[{type_to_str(lt)}].",
            )
        if expected.WhichOneof("type") == "enum_type":
            value = binding.scalar.primitive.string_value
            allowed = list(expected.enum_type.values)
            if value not in allowed:
                errs.add(
                    E.ILLEGAL_ENUM_VALUE,
                    n.id,
                    f"Input [{param}] is an enum; [{value}] is not one of its values {allowed}.",
                )
        return _ok(lt, [], errs)

    errs.add(
        E.MISMATCHING_BINDINGS,
        n.id,
        f"Input [{param}] expects a value of type [{type_to_str(expected)}] but its binding is "
        f"{'an offloaded literal' if kind else 'empty'}, which cannot be bound here.",
    )
    return _ok(None, [], errs)


def _bind_container_to_union(w, n, param, binding, expected, errs, check_types):
    # A list/map literal has no single type to test against the union, so try each variant in
    # isolation (issues of failed trials are dropped) and require exactly one to fit.
    match: tuple[LiteralType | None, list[str], bool] | None = None
    match_variant: LiteralType | None = None
    for variant in expected.union_type.variants:
        trial = validate_binding(w, n, param, binding, variant, E.Errors(), check_types)
        if trial[2]:
            if match is not None:
                errs.add(
                    E.AMBIGUOUS_BINDING_UNION_VALUE,
                    n.id,
                    f"Input [{param}] has union type [{type_to_str(expected)}]; its value fits both variants "
                    f"[{type_to_str(match_variant)}] and [{type_to_str(variant)}]. Make the variants distinct.",
                )
                return _ok(None, [], errs)
            match, match_variant = trial, variant
    if match is not None:
        return match
    errs.add(
        E.INCOMPATIBLE_BINDING_UNION_VALUE,
        n.id,
        f"Input [{param}] has union type [{type_to_str(expected)}]; its value fits none of the variants.",
    )
    return _ok(None, [], errs)


def _bind_promise(w, n, param, promise, expected, errs, check_types):
    from flytelite.compiler.interface import validate_output_var

    up = _find_node(w, promise.node_id, errs.scope())
    if up is not None:
        try:
            name, index = parse_var_name(promise.var)
        except ValueError as exc:
            errs.add(E.SYNTAX_ERROR, n.id, f"Cannot parse output reference [{promise.var}] of input [{param}]: {exc}.")
            return _ok(None, [], errs)
        input_label, output_label = _label(n, param), _label(up, promise.var)
        var = validate_output_var(up, name, errs.scope())
        if var is not None:
            source = var.type
            if index is not None:
                if source.WhichOneof("type") != "collection_type":
                    errs.add(
                        E.MISMATCHING_TYPES,
                        n.id,
                        f"Output [{output_label}] is indexed but has non-list type [{type_to_str(source)}].",
                    )
                    return _ok(None, [], errs)
                source = source.collection_type
            for attr in promise.attr_path:
                source_kind = source.WhichOneof("type")
                if source_kind == "collection_type":
                    source = source.collection_type
                elif source_kind == "map_value_type":
                    source = source.map_value_type
                elif source.HasField("structure") and len(source.structure.dataclass_type) > 0:
                    key = attr.string_value
                    if key not in source.structure.dataclass_type:
                        errs.add(
                            E.FIELD_NOT_FOUND,
                            n.id,
                            f"Output [{promise.var}] (type [{type_to_str(source)}]) has no field [{key}].",
                        )
                        return _ok(None, [], errs)
                    source = source.structure.dataclass_type[key]
            if not check_types or literal_type_castable(source, expected):
                promise.node_id = up.id  # an empty node id meant the workflow inputs: make it explicit
                return var.type, [up.id], True
            errs.add(
                E.MISMATCHING_TYPES,
                n.id,
                f"Output [{output_label}] has type [{type_to_str(source)}] but is bound to input "
                f"[{input_label}] which expects type [{type_to_str(expected)}].",
            )
            return _ok(None, [], errs)
    errs.add(E.PARAMETER_NOT_BOUND, n.id, f"Input [{param}] is bound to an output that does not exist.")
    return _ok(None, [], errs)


def _find_node(w: WorkflowBuilder, node_id: str, errs: E.Errors) -> NodeBuilder | None:
    if node_id == "":
        return w.get_node(START_NODE)
    up = w.get_node(node_id)
    if up is None:
        errs.add(
            E.NODE_REFERENCE_NOT_FOUND,
            node_id,
            f"Node [{node_id}] is referenced by a binding but is not a node of this workflow "
            "(nodes must be declared before the branches that use them).",
        )
    return up


def validate_bindings(
    w: WorkflowBuilder,
    n: NodeBuilder,
    bindings: Iterable[literals_pb2.Binding],
    params: interface_pb2.VariableMap | None,
    check_types: bool,
    direction: EdgeDirection,
    errs: E.Errors,
) -> tuple[interface_pb2.VariableMap, bool]:
    """Validate a node's bindings against its input variables and add the edges they imply.

    Returns the variables the bindings actually provide (used for branch and approve-gate nodes,
    whose inputs are whatever they are bound to).
    """
    resolved = interface_pb2.VariableMap()
    provided: set[str] = set()
    variables = params.variables if params is not None else {}
    for b in bindings:
        var = variables.get(b.var) if b.var in variables else None
        if var is None and check_types:
            known = ", ".join(sorted(variables)) or "none"
            errs.add(
                E.VARIABLE_NAME_NOT_FOUND,
                n.id,
                f"[{b.var}] is not an input of node [{n.id}] (its inputs: {known}).",
            )
        elif not b.HasField("binding"):
            errs.add(E.VALUE_REQUIRED, n.id, f"Input [{b.var}] has an empty binding.")
        elif b.var in provided:
            errs.add(E.PARAMETER_BOUND_MORE_THAN_ONCE, n.id, f"Input [{b.var}] is bound more than once.")
        else:
            expected = var.type if var is not None else LiteralType(simple=types_pb2.SimpleType.NONE)
            provided.add(b.var)
            res_type, upstream, ok = validate_binding(w, n, b.var, b.binding, expected, errs.scope(), check_types)
            if ok:
                for up in upstream:
                    if direction is EdgeDirection.BIDIRECTIONAL:
                        w.graph.add_execution_edge(up, n.id)
                    elif direction is EdgeDirection.DOWNSTREAM:
                        w.graph.add_downstream_edge(up, n.id)
                    else:
                        w.graph.add_upstream_edge(up, n.id)
                out = resolved.variables[b.var]
                if res_type is not None:
                    out.type.CopyFrom(res_type)
    for name, var in variables.items():
        if name not in provided and not is_optional(var.type):
            errs.add(E.PARAMETER_NOT_BOUND, n.id, f"Required input [{name}] is not bound.")
    return resolved, errs.ok
