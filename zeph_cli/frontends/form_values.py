"""A server's form (MCP elicitation), field by field, for the front ends that ask it: labels, and the typed
text checked and turned into the value the server's schema asks for.

Invariant: pure functions, shared by the chat app's dialog and the terminal's questions, so both accept and
refuse the same answers; a refusal is a `FormError` with one line naming the field.
"""

from __future__ import annotations

import datetime
import re
from typing import Any
from urllib.parse import urlparse

from ..tools.elicitation import ElicitationField

EMAIL = re.compile(r"^[^@\s]+@[^@\s]+\.[^@\s]+$")


class FormError(ValueError):
    """An answer the field does not take, in one line."""


def field_label(field: ElicitationField) -> str:
    """`Title (name)`, or the name alone; `*` marks a required field."""
    title = " ".join(field.title.split())
    label = f"{title} ({field.name})" if title and title != field.name else field.name
    return label + (" *" if field.required else "")


def field_hint(field: ElicitationField) -> str:
    """What the field takes, in a few words: `integer, 1–10`, `email`, `3–20 characters`."""
    parts: list[str] = []
    if field.kind in ("number", "integer"):
        parts += [field.kind, _bounds(field.minimum, field.maximum)]
    elif field.kind == "string":
        parts += [field.format, _bounds(field.min_length, field.max_length, " characters")]
    return ", ".join(part for part in parts if part)


def _bounds(low: float | None, high: float | None, unit: str = "") -> str:
    """`1–10`, `at least 1`, `at most 10` (with `unit` after), or "" with neither bound."""
    if low is not None and high is not None:
        return f"{low:g}–{high:g}{unit}"
    if low is not None:
        return f"at least {low:g}{unit}"
    return f"at most {high:g}{unit}" if high is not None else ""


def choice_labels(field: ElicitationField) -> list[str]:
    """An enum field's choices as shown: their titles when the server gave them, else the values."""
    if field.choice_titles and len(field.choice_titles) == len(field.choices):
        return [title or value for title, value in zip(field.choice_titles, field.choices)]
    return list(field.choices)


def default_text(field: ElicitationField) -> str:
    """The field's default as it is typed (empty when there is none)."""
    if field.default is None or isinstance(field.default, bool):
        return ""
    if isinstance(field.default, float) and field.default.is_integer() and field.kind == "integer":
        return str(int(field.default))
    return str(field.default)


def text_value(field: ElicitationField, text: str) -> Any:
    """The value of a text, number or integer field typed as `text`; None when left empty (and not required).
    `FormError` when the field does not take it."""
    name = field.title or field.name
    text = text.strip() if field.kind in ("number", "integer") else text
    if not text.strip():
        if field.required:
            raise FormError(f"{name} is required")
        return None
    if field.kind == "integer":
        try:
            value: Any = int(text)
        except ValueError:
            raise FormError(f"{name} takes a whole number") from None
        _check_range(field, value, name)
        return value
    if field.kind == "number":
        try:
            value = float(text)
        except ValueError:
            raise FormError(f"{name} takes a number") from None
        if value != value or value in (float("inf"), float("-inf")):
            raise FormError(f"{name} takes a number")
        _check_range(field, value, name)
        return int(value) if value.is_integer() and "." not in text and "e" not in text.lower() else value
    if field.min_length is not None and len(text) < field.min_length:
        raise FormError(f"{name} takes at least {field.min_length} characters")
    if field.max_length is not None and len(text) > field.max_length:
        raise FormError(f"{name} takes at most {field.max_length} characters")
    _check_format(field, text, name)
    return text


def _check_range(field: ElicitationField, value: float, name: str) -> None:
    if field.minimum is not None and value < field.minimum:
        raise FormError(f"{name} is at least {field.minimum:g}")
    if field.maximum is not None and value > field.maximum:
        raise FormError(f"{name} is at most {field.maximum:g}")


def _check_format(field: ElicitationField, text: str, name: str) -> None:
    fmt = field.format
    if fmt == "email" and not EMAIL.match(text):
        raise FormError(f"{name} takes an email address")
    if fmt == "uri":
        parsed = urlparse(text)
        if not parsed.scheme or not (parsed.netloc or parsed.path):
            raise FormError(f"{name} takes a URI (scheme:…, e.g. https://example.com)")
    if fmt == "date":
        try:
            datetime.date.fromisoformat(text)
        except ValueError:
            raise FormError(f"{name} takes a date (YYYY-MM-DD)") from None
    if fmt == "date-time":
        try:
            datetime.datetime.fromisoformat(text.replace("Z", "+00:00").replace("z", "+00:00"))
        except ValueError:
            raise FormError(f"{name} takes a date and time (YYYY-MM-DDTHH:MM:SS)") from None


def choice_value(field: ElicitationField, picked: str | None) -> str | None:
    """An enum field's value (one of its choices, or None when none is picked and it is not required)."""
    if picked is None or picked == "":
        if field.required:
            raise FormError(f"{field.title or field.name} is required: pick one")
        return None
    if picked not in field.choices:
        raise FormError(f"{field.title or field.name} takes one of: {', '.join(field.choices)}")
    return picked
