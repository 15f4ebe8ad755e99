"""A server's form request (MCP elicitation, form mode) as zeph's `ElicitationRequest`, and the answer back.

Invariant: pure values, no SDK types: the connection hands in the request's `requestedSchema` (a plain dict)
and gets plain values back. Only what a person can be asked in a form becomes a field: strings (with their
formats and lengths), numbers, integers, booleans and single-choice enums (plain `enum` or titled `oneOf`).
A property of any other shape is left out when it is optional; when it is required, the request cannot be
asked at all and `form_fields` says why (the connection then declines, naming it in the server's log).
An accepted answer carries only the fields of the form, with values of the kinds the schema asked for.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ...tools.elicitation import ElicitationAnswer, ElicitationField

_SIMPLE = ("string", "number", "integer", "boolean")


class UnaskableForm(Exception):
    """The form has a required field no dialog can ask for (one line naming it)."""


def form_fields(schema: Mapping[str, Any]) -> tuple[ElicitationField, ...]:
    """The fields of a form's `requestedSchema`, in the schema's order; `UnaskableForm` when one it requires
    cannot be asked."""
    properties = schema.get("properties") or {}
    if not isinstance(properties, Mapping):
        raise UnaskableForm("its requestedSchema has no properties table")
    required = set(schema.get("required") or ())
    fields: list[ElicitationField] = []
    for name, spec in properties.items():
        field = _field(str(name), spec if isinstance(spec, Mapping) else {}, str(name) in required)
        if field is not None:
            fields.append(field)
        elif name in required:
            kind = spec.get("type", "?") if isinstance(spec, Mapping) else "?"
            raise UnaskableForm(f"its required field {name!r} is of a kind zeph cannot ask for ({kind})")
    return tuple(fields)


def _field(name: str, spec: Mapping[str, Any], required: bool) -> ElicitationField | None:
    kind = spec.get("type")
    common: dict[str, Any] = {
        "name": name, "title": str(spec.get("title") or ""), "description": str(spec.get("description") or ""),
        "required": required, "default": spec.get("default"),
    }
    choices = spec.get("enum")
    if kind == "string" and isinstance(choices, list) and choices:
        titles = spec.get("enumNames")
        titles = [str(t) for t in titles] if isinstance(titles, list) and len(titles) == len(choices) else []
        return ElicitationField(kind="enum", choices=tuple(str(c) for c in choices), choice_titles=tuple(titles), **common)
    one_of = spec.get("oneOf")
    if kind == "string" and isinstance(one_of, list) and one_of and all(isinstance(o, Mapping) and "const" in o for o in one_of):
        return ElicitationField(kind="enum", choices=tuple(str(o["const"]) for o in one_of),
                                choice_titles=tuple(str(o.get("title") or o["const"]) for o in one_of), **common)
    if kind not in _SIMPLE:
        return None
    return ElicitationField(
        kind=kind, format=str(spec.get("format") or "") if kind == "string" else "",
        minimum=_number(spec.get("minimum")), maximum=_number(spec.get("maximum")),
        min_length=_whole(spec.get("minLength")), max_length=_whole(spec.get("maxLength")), **common,
    )


def answer_content(answer: ElicitationAnswer, fields: tuple[ElicitationField, ...]) -> dict[str, Any] | None:
    """What goes back to the server with an answer: an accepted form's values (only the form's fields, each of
    the kind asked for, a number given as text converted), None for decline and cancel."""
    if answer.action != "accept":
        return None
    kinds = {f.name: f.kind for f in fields}
    content: dict[str, Any] = {}
    for name, value in answer.content.items():
        kind = kinds.get(name)
        if kind is None or value is None:
            continue
        if kind == "integer" and isinstance(value, str):
            value = int(value)
        elif kind == "number" and isinstance(value, str):
            value = float(value)
        elif kind in ("string", "enum") and not isinstance(value, str):
            value = str(value)
        content[name] = value
    return content


def _number(value: Any) -> float | None:
    return float(value) if isinstance(value, int | float) and not isinstance(value, bool) else None


def _whole(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None
