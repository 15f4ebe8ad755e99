"""`/memory` in the chat app: the memories seen here, `add TEXT` to save one, `forget ID` to delete one.

Invariant: goes through the chat session's long-term memory (never a provider or SQL); an argument that
cannot run is refused as typed (`memory_problem`), before anything is saved or forgotten.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .. import ChatHost


def memory_action(argument: str) -> tuple[str, str]:
    """(action, rest) of a /memory argument: ("list", ""), ("add", TEXT) or ("forget", ID)."""
    parts = argument.split(maxsplit=1)
    if not parts:
        return "list", ""
    return parts[0].lower(), (parts[1] if len(parts) > 1 else "").strip()


def memory_problem(argument: str) -> str | None:
    """Why a /memory argument cannot run, or None."""
    action, rest = memory_action(argument)
    if action == "list":
        return None
    if action == "add":
        return None if rest else "/memory add needs the fact to remember: /memory add The tests run with make test"
    if action == "forget":
        return None if rest.isdigit() else f"/memory forget needs a memory id (a number), not {rest!r}: /memory forget 3"
    return f"/memory takes add TEXT or forget ID, not {action!r} (/memory alone lists them)"


async def memory_command(host: ChatHost, argument: str) -> None:
    memories = host.session.long_term_memory()
    action, rest = memory_action(argument)
    if action == "add":
        memory, created = memories.save(rest, source="user")
        done = "saved" if created else "already saved as"
        await host.notice(f"{done} memory #{memory.id} ({memory.scope})")
    elif action == "forget":
        memory = memories.store.forget(int(rest))
        await host.notice(f"forgot memory #{memory.id}")
    else:
        await host.show(memory_markdown(memories.visible()))


def memory_markdown(memories: Sequence[Any]) -> str:
    """Markdown for /memory: the memories seen here (id, scope, confidence, text), or how to save one."""
    if not memories:
        return "No saved memories here. `/memory add TEXT` saves one; the model can save them with memory_save."
    lines = ["| # | Scope | Confidence | Memory |", "|---|---|---|---|"]
    for memory in memories:
        text = " ".join(memory.content.split()).replace("|", "\\|")
        lines.append(f"| {memory.id} | {memory.scope} | {memory.confidence:g} | {text} |")
    lines += ["", "`/memory add TEXT` saves one here · `/memory forget ID` deletes one · `zeph memory` manages them all."]
    return "\n".join(lines)
