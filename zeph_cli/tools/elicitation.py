"""What a tool's server asks the user for mid-call (MCP elicitation, form mode), and the answer.

Invariant: values only — no I/O and no SDK types. A front end that can ask (the chat app, a terminal)
supplies an `Elicitor`; everywhere else `decline_all` answers, so a server is never left waiting.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

FieldKind = Literal["string", "number", "integer", "boolean", "enum"]
ElicitationAction = Literal["accept", "decline", "cancel"]


@dataclass(frozen=True)
class ElicitationField:
    """One field of the requested form (a property of the server's flat JSON schema)."""

    name: str
    kind: FieldKind
    title: str = ""
    description: str = ""
    required: bool = False
    default: Any = None
    choices: tuple[str, ...] = ()  # kind "enum": the allowed values
    choice_titles: tuple[str, ...] = ()  # the same length as choices, or empty
    format: str = ""  # string formats: email, uri, date, date-time
    minimum: float | None = None
    maximum: float | None = None
    min_length: int | None = None
    max_length: int | None = None


@dataclass(frozen=True)
class ElicitationRequest:
    """A server's question: its message and the fields to fill (none: a plain confirmation)."""

    server_id: str
    message: str
    fields: tuple[ElicitationField, ...] = ()
    asker: str = ""  # the sub-agent whose call led to it ("" = the session the user talks to)


@dataclass(frozen=True)
class ElicitationAnswer:
    """accept (with the values, by field name), decline, or cancel (dismissed without a choice)."""

    action: ElicitationAction
    content: Mapping[str, Any] = field(default_factory=dict)


Elicitor = Callable[[ElicitationRequest], Awaitable[ElicitationAnswer]]


async def decline_all(request: ElicitationRequest) -> ElicitationAnswer:
    """Where nobody can be asked (not a terminal, a benchmark): declined, as the protocol allows."""
    return ElicitationAnswer("decline")
