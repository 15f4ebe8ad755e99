"""A session as a document: Markdown to read (`zeph sessions export`, `/export`) and JSON with every message.

Invariant: pure string and value building over the store's values (no printing, no I/O); the JSON
keeps every message and part, the Markdown what the user saw (the caller chooses which messages).
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from ..messages import part_to_dict
from ..tokens import is_bound_name
from .conversations import SUBAGENT_KEY, UNSENT_KEY, Conversation, StoredMessage


def message_label(stored: StoredMessage) -> str:
    label = stored.role
    if stored.partial:
        label += f" (partial: {stored.metadata.get('error', 'interrupted')})"
    elif stored.metadata.get(UNSENT_KEY):
        label += f" (unanswered, not sent again: {stored.metadata[UNSENT_KEY]})"
    return label


@dataclass(frozen=True)
class Nested:
    """A sub-agent's session shown inside its parent's transcript, after its task call's result."""

    conversation: Conversation
    messages: list[StoredMessage]
    children: dict[str, Nested] = field(default_factory=dict)  # its own sub-agents, by task call id


def conversation_markdown(
    conversation: Conversation, messages: list[StoredMessage], children: Mapping[str, Nested] | None = None,
    *, level: int = 1,
) -> str:
    """The transcript as Markdown; `children` (sub-agents' sessions by task call id) are nested after the
    result of the call that started them, one heading level deeper."""
    h = "#" * level
    lines = [f"{h} {conversation.title or f'Session {conversation.id}'}", ""]
    lines.append(f"- session: {conversation.id}")
    link = conversation.metadata.get(SUBAGENT_KEY)
    if isinstance(link, dict):
        lines.append(f"- sub-agent of session {link.get('parent')} (task call {link.get('call_id')}, "
                     f"{link.get('mode', 'agent')} mode)")
    lines.append(f"- provider: {conversation.provider} · model: {conversation.model}")
    lines.append(f"- started: {conversation.created_at} · directory: {conversation.cwd}")
    if conversation.metadata.get("system"):
        lines.append(f"- topic prompt: {conversation.metadata['system']}")
    for stored in messages:
        if stored.metadata.get("marker") == "clear":
            lines += ["", "---", "", "*Context cleared: the messages above are no longer sent to the model.*"]
            continue
        results = stored.message.tool_results
        if results:
            for result in results:
                status = " (error)" if result.is_error else ""
                lines += ["", f"{h}# Tool result: {result.name or result.tool_call_id}{status}", "", fenced(result.content)]
                child = (children or {}).get(result.tool_call_id)
                if child is not None:
                    nested = conversation_markdown(child.conversation, child.messages, child.children, level=level + 2)
                    lines += ["", f"{h}# Sub-agent session {child.conversation.id}", "", nested.rstrip()]
            continue
        text = stored.message.content.rstrip()
        if text or not stored.message.tool_calls:
            label = message_label(stored)
            lines += ["", f"{h}# {label[:1].upper()}{label[1:]}", "", text]
        for call in stored.message.tool_calls:
            arguments = json.dumps(call.arguments, indent=2, ensure_ascii=False)
            lines += ["", f"{h}# Tool call: {call.name}", "", fenced(arguments, "json")]
    return "\n".join(lines) + "\n"


def fenced(text: str, language: str = "text") -> str:
    """`text` in a Markdown code fence longer than any backtick run inside it."""
    longest = max((len(run) for run in re.findall(r"`+", text)), default=0)
    fence = "`" * max(3, longest + 1)
    return f"{fence}{language}\n{text.rstrip()}\n{fence}"


def conversation_json(conversation: Conversation, messages: list[StoredMessage]) -> dict[str, Any]:
    return {
        "id": conversation.id,
        "title": conversation.title,
        "created_at": conversation.created_at,
        "updated_at": conversation.updated_at,
        "provider": conversation.provider,
        "model": conversation.model,
        "cwd": conversation.cwd,
        "metadata": conversation.metadata,
        "messages": [
            {
                "id": m.id,
                "role": m.role,
                "content": m.message.content,
                "parts": [part_to_dict(p) for p in m.message.parts],
                "created_at": m.created_at,
                "agent_visible": m.agent_visible,
                "user_visible": m.user_visible,
                "compacted_at": m.compacted_at,
                "metadata": m.metadata,
                # a count `zeph ask` stored from a bound is not a token count: left out
                "token_count": None if is_bound_name(m.token_counter) else m.token_count,
            }
            for m in messages
        ],
    }
