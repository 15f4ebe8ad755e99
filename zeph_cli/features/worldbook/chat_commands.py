"""`/worldbook` in the chat app: the entries in force for this session, those the recent messages
trigger, and the session's isolation switch.

Invariant: goes through `WorldbookStore` and the agent's worldbook (never a provider); a bad
argument raises `UsageError` with one line; isolation is kept in the session's metadata, and the
chat session's copy of the conversation is refreshed so later writes keep it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ...errors import UsageError
from .store import ISOLATED_KEY, WorldbookStore
from .turn import is_isolated

if TYPE_CHECKING:
    from .. import ChatHost

USAGE = "/worldbook lists the entries in force here; /worldbook isolate on|off switches isolation mode"


def worldbook_reply(session: Any, argument: str) -> str:
    """Markdown answering `/worldbook [isolate on|off]` for a `ChatSession`."""
    words = argument.split()
    if words[:1] == ["isolate"]:
        if len(words) != 2 or words[1] not in ("on", "off"):
            raise UsageError("use /worldbook isolate on or /worldbook isolate off")
        return _isolate(session, words[1] == "on")
    if words:
        raise UsageError(USAGE)
    return _listing(session)


def _isolate(session: Any, on: bool) -> str:
    conversation = session.conversation
    if conversation is None:
        raise UsageError("isolation is kept with the session: send a first message, then /worldbook isolate on")
    store = session.agent.store
    session.conversation = store.set_metadata(conversation.id, ISOLATED_KEY, True if on else None)
    if not on:
        return "worldbook isolation off: memory, recall, skills and MCP tools are sent again"
    bound = WorldbookStore(store.db).in_force(session.agent.worldbook.project_root, conversation.id)
    if not bound:
        return "worldbook isolation on — no worldbook entries are in force here, so nothing is dropped yet"
    return "worldbook isolation on: long-term memory, recall, skills and MCP tools are no longer sent"


def _listing(session: Any) -> str:
    agent = session.agent
    conversation = session.conversation
    records = WorldbookStore(agent.store.db).in_force(agent.worldbook.project_root, conversation.id if conversation else None)
    isolation = "on" if conversation is not None and is_isolated(conversation.metadata) else "off"
    if not records:
        return (f"No worldbook entries in force here (isolation {isolation}). Add one with "
                "`zeph worldbook add --keyword WORD --content \"…\"`.")
    fired = {e.id for e in agent.turn_worldbook.triggered}
    lines = ["| # | Position | Triggers | Bound to | Recent messages | Content |", "|---|---|---|---|---|---|"]
    for r in records:
        position = f"at_depth {r.depth}" if r.position == "at_depth" else r.position
        triggers = ("regex: " if r.regex else "") + ", ".join(r.keywords) if r.keywords else "(always)"
        bound = f"session {r.conversation_id}" if r.scope == "session" else "project"
        text = " ".join(r.content.split())
        text = text if len(text) <= 60 else text[:59] + "…"
        cells = [str(r.id), position, triggers, bound, "triggered" if r.id in fired else "", text]
        lines.append("| " + " | ".join(c.replace("|", "\\|") for c in cells) + " |")
    lines += ["", f"Isolation: {isolation} · `/worldbook isolate on|off` · `zeph worldbook list` outside the chat."]
    return "\n".join(lines)


async def worldbook_command(host: ChatHost, argument: str) -> None:
    await host.show(worldbook_reply(host.session, argument))
    host.refresh_gauge()
