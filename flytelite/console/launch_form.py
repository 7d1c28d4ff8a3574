"""The launch form and typed-interface tables, generated from a ParameterMap / VariableMap (pure).

One field per expected input, its widget chosen by the input's LiteralType
(console.forms.widget_for) and pre-filled with the launch plan's default. Fixed
inputs are shown, not editable. The page script posts the texts to
/console/api/launch, which converts them by type and starts the execution.
"""

from __future__ import annotations

import json

from flyteidl.core import interface_pb2, literals_pb2

from flytelite.compiler import type_to_str
from flytelite.console.forms import text_for_literal, widget_for
from flytelite.console.layout import esc, may
from flytelite.console.literals import render_literal


def interface_table(variables: interface_pb2.VariableMap, title: str,
                    params: interface_pb2.ParameterMap | None = None) -> str:
    names = sorted(params.parameters if params is not None else variables.variables)
    if not names:
        return f"<h3>{esc(title)}</h3><p class='muted'>none</p>"
    rows = []
    for name in names:
        if params is not None:
            p = params.parameters[name]
            var, extra = p.var, ("required" if p.required else
                                 f"default {esc(render_literal(p.default))}" if p.HasField("default") else "optional")
        else:
            var, extra = variables.variables[name], None
        rows.append(f"<tr><td>{esc(name)}</td><td><span class='tag'>{esc(type_to_str(var.type))}</span></td>"
                    f"{f'<td>{extra}</td>' if extra is not None else ''}<td class='muted'>{esc(var.description if var.description != name else '')}</td></tr>")
    return (f"<h3>{esc(title)}</h3><table class='interface'><tr><th>Name</th><th>Type</th>{'<th>Required or default</th>' if params is not None else ''}"
            f"<th>Description</th></tr>{''.join(rows)}</table>")


def launch_form(kind: str, project: str, domain: str, name: str, version: str,
                params: interface_pb2.ParameterMap, fixed: literals_pb2.LiteralMap | None = None) -> str:
    if not may("launch", project, domain):
        return ""
    target = json.dumps({"kind": kind, "project": project, "domain": domain, "name": name, "version": version})
    fields = []
    for input_name in sorted(params.parameters):
        p = params.parameters[input_name]
        fields.append(_field(input_name, p))
    fixed_values = fixed.literals if fixed is not None else {}
    for input_name in sorted(fixed_values):
        fields.append(f"<label>{esc(input_name)} (fixed)<pre>{esc(render_literal(fixed_values[input_name]))}</pre>"
                      "</label>")
    if not fields:
        fields.append("<p class='muted'>This takes no inputs.</p>")
    return (f"<form class='launch' data-target='{esc(target)}'><b>Launch {esc(name)} <span class='muted'>"
            f"({esc(version)})</span></b>{''.join(fields)}<div><button type='submit'>Launch</button></div>"
            "<div class='launch-result'></div></form>")


def _field(name: str, p: interface_pb2.Parameter) -> str:
    lt = p.var.type
    w = widget_for(lt)
    default = text_for_literal(p.default, lt) if p.HasField("default") else ""
    label = f"{esc(name)} <span class='type'>{esc(w.type_text)}{'' if not p.required else ' · required'}</span>"
    attrs = f"name='{esc(name)}' data-input='{esc(name)}' data-kind='{w.kind}'"
    if w.kind == "bool":
        checked = " checked" if default == "true" else ""
        return f"<label>{label}<input type='checkbox' {attrs}{checked}></label>"
    if w.kind == "enum":
        options = "".join(f"<option{' selected' if c == default else ''}>{esc(c)}</option>" for c in w.choices)
        return f"<label>{label}<select {attrs}>{options}</select></label>"
    if w.kind == "json":
        return (f"<label>{label}<textarea {attrs} placeholder='JSON'>{esc(default)}</textarea></label>")
    # Plain text even for numbers: the server converts and checks, and its message says what is wrong.
    mode = {"int": " inputmode='numeric'", "float": " inputmode='decimal'"}.get(w.kind, "")
    hint = {"datetime": "2026-01-31T12:00:00Z", "duration": "90 or 1h30m", "blob": "path or URI"}.get(w.kind, "")
    placeholder = f" placeholder='{esc(hint)}'" if hint else ""
    return f"<label>{label}<input type='text'{mode} {attrs} value='{esc(default)}'{placeholder}></label>"
