"""Marking tool output as untrusted data in what is sent to the model.

Invariant: pure; every tool result leaves wrapped in one
`<tool_output … untrusted="true">` block whose closing tag cannot be forged
from inside the output. Stored messages keep the raw output for the user.
"""

from __future__ import annotations

import re
from dataclasses import replace

from ..messages import Message, ToolResultPart
from ..tokens import TokenCounter

_CLOSING = re.compile(r"</\s*tool_output", re.IGNORECASE)


def _opening(result: ToolResultPart) -> str:
    name = re.sub(r"[^A-Za-z0-9_.-]", "", result.name) or "tool"
    status = ' status="error"' if result.is_error else ""
    return f'<tool_output tool="{name}"{status} untrusted="true">\n'


CLOSING_TAG = "\n</tool_output>"


def delimit(result: ToolResultPart) -> ToolResultPart:
    body = _CLOSING.sub("<\\/tool_output", result.content)
    return replace(result, content=f"{_opening(result)}{body}{CLOSING_TAG}")


def delimiter_tokens(message: Message, counter: TokenCounter) -> int:
    """Tokens the wrapping adds to `message` as sent (0 for a message without tool results)."""
    return sum(counter.count(_opening(r)) + counter.count(CLOSING_TAG) for r in message.tool_results)


def delimit_tool_results(messages: list[Message]) -> list[Message]:
    """The same messages with every tool result wrapped as untrusted data."""
    out: list[Message] = []
    for message in messages:
        if not message.tool_results:
            out.append(message)
            continue
        parts = tuple(delimit(p) if isinstance(p, ToolResultPart) else p for p in message.parts)
        out.append(Message(message.role, parts))
    return out
