"""An MCP prompt's messages as (role, text) pairs, and as text to print or edit.

Invariant: the server's roles are kept as they are ("user" or "assistant"), in the server's order, one
pair per message; content that is not text (an image, an embedded resource) is the same one-line
placeholder a tool result gets. Adjacent messages are never merged here: the caller decides.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from .tools import result_text


def prompt_messages(result: Any) -> list[tuple[str, str]]:
    """A `GetPromptResult`'s messages as (role, text)."""
    return [(str(m.role), result_text([m.content]).strip()) for m in getattr(result, "messages", None) or []]


def prompt_text(messages: Sequence[tuple[str, str]]) -> str:
    """The messages as text: plain when all are the user's, otherwise each under a `## role` header."""
    if all(role == "user" for role, _ in messages):
        return "\n\n".join(text for _, text in messages).strip()
    return "\n\n".join(f"## {role}\n\n{text}" for role, text in messages).strip()
