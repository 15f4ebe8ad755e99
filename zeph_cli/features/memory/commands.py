"""`zeph memory`: list, add, search, edit, archive and forget long-term memories.

Invariant: presentation only — every command goes through `MemoryStore` or
`LongTermMemory` (imported inside the command, so `zeph --help` stays light),
and every bad id, scope or input ends as one `zeph: error:` line with a
non-zero exit, the memories untouched.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Optional

import typer

from ...frontends.cli.editor import edit_in_editor
from ...paths import home_relative
from ...errors import UsageError
from ...frontends.cli.stderr import eprint

if TYPE_CHECKING:
    from .long_term_access import LongTermMemory
    from .long_term_store import Memory, MemoryStore

memory_app = typer.Typer(
    help="Long-term memory: facts sent as reference where relevant.\n\n"
    "Each turn gets the saved memories relevant to it, as reference, never as instructions.",
    no_args_is_help=True,
)

SCOPE_HELP = "user (everywhere), project (this project only) or session (one session only)"
PREVIEW_CHARS = 100


def _store() -> "MemoryStore":
    from ...frontends.cli.command_context import open_store
    from .long_term_store import MemoryStore

    return MemoryStore(open_store().db)


def _here(store: "MemoryStore", conversation_id: int | None = None) -> "LongTermMemory":
    from .long_term_access import LongTermMemory

    return LongTermMemory.here(store, Path.cwd(), conversation_id=conversation_id)


def _scope(value: Optional[str]) -> Optional[str]:
    from .long_term_store import SCOPES

    if value is not None and value not in SCOPES:
        raise UsageError(f"--scope {value!r} is not a scope: use user, project or session")
    return value


def _where(memory: "Memory") -> str:
    if memory.scope == "project":
        return home_relative(memory.project_root or "")
    if memory.scope == "session":
        return f"session {memory.conversation_id}"
    return "everywhere"


def _preview(memory: "Memory") -> str:
    text = " ".join(memory.content.split())
    return text if len(text) <= PREVIEW_CHARS else text[: PREVIEW_CHARS - 1] + "…"


def _line(memory: "Memory") -> str:
    archived = " (archived)" if memory.archived else ""
    return f"#{memory.id}\t{memory.scope}\t{_where(memory)}\t{memory.confidence:g}\t{_preview(memory)}{archived}"


@memory_app.command("list")
def memory_list(
    scope: Optional[str] = typer.Option(None, "--scope", metavar="SCOPE", help=f"Only this scope: {SCOPE_HELP}."),
    json_output: bool = typer.Option(False, "--json", help="Print JSON."),
    include_archived: bool = typer.Option(False, "--all", help="Include archived memories."),
) -> None:
    """List the saved memories of every project and session.

    Each with its id, scope, where it applies, confidence and text.
    """
    memories = _store().list(scope=_scope(scope), include_archived=include_archived)
    if json_output:
        print(json.dumps([m.as_json() for m in memories], indent=2, ensure_ascii=False))
        return
    if not memories:
        eprint('no memories yet: save one with zeph memory add "…"')
        return
    for memory in memories:
        print(_line(memory))


def _read_text(text: str) -> str:
    if text != "-":
        return text
    from ...frontends.cli.command_context import read_stdin

    return read_stdin()


@memory_app.command("add")
def memory_add(
    text: str = typer.Argument(..., metavar="TEXT", help="The fact to remember; - reads it from standard input."),
    scope: Optional[str] = typer.Option(None, "--scope", metavar="SCOPE", help=f"{SCOPE_HELP}; default: project inside a git work tree, else user."),
    confidence: float = typer.Option(1.0, "--confidence", metavar="C", help="How sure the fact is, 0 to 1."),
    session: Optional[int] = typer.Option(None, "--session", metavar="ID", help="For --scope session: the session ID (default: the most recent)."),
) -> None:
    """Save a memory."""
    from ...store import ConversationStore

    store = _store()
    scope = _scope(scope)
    conversation_id = None
    if scope == "session":
        conversations = ConversationStore(store.db)
        if session is not None:
            conversation_id = conversations.get_conversation(session).id
        else:
            latest = conversations.latest_conversation()
            if latest is None:
                raise UsageError('--scope session needs a session: start one with zeph ask "…"')
            conversation_id = latest.id
    elif session is not None:
        raise UsageError("--session goes with --scope session")
    memory, created = _here(store, conversation_id).save(_read_text(text), scope, confidence, source="cli")
    if created:
        eprint(f"saved memory #{memory.id} ({memory.scope}: {_where(memory)})")
    else:
        eprint(f"already saved as memory #{memory.id} ({memory.scope}: {_where(memory)}); nothing added")
    print(memory.id)


@memory_app.command("search")
def memory_search(
    query: str = typer.Argument(..., metavar="QUERY", help="Words to look for."),
    limit: int = typer.Option(10, "--limit", "-n", min=1, metavar="N", help="How many memories to show."),
    json_output: bool = typer.Option(False, "--json", help="Print JSON."),
) -> None:
    """Rank the memories seen here against QUERY, best first.

    The memories seen here are the user-wide ones and this project's.
    """
    found, warning = _here(_store()).search(query, limit)
    if warning:
        eprint(f"zeph: warning: {warning}")
    if json_output:
        print(json.dumps(
            [{**r.memory.as_json(), "score": round(r.score, 4), "similarity": round(r.similarity, 4)} for r in found],
            indent=2, ensure_ascii=False,
        ))
        return
    if not found:
        eprint(f"no memories match {query!r}")
        raise typer.Exit(1)
    for ranked in found:
        print(f"{_line(ranked.memory)}\t(score {ranked.score:.2f})")


def _edit_in_editor(content: str) -> str:
    return edit_in_editor(content + "\n", filename="MEMORY.txt", unchanged="the memory", instead="give the new text with --text")


@memory_app.command("edit")
def memory_edit(
    memory_id: int = typer.Argument(..., metavar="ID"),
    text: Optional[str] = typer.Option(None, "--text", metavar="TEXT", help="The new text (no editor); - reads standard input."),
    confidence: Optional[float] = typer.Option(None, "--confidence", metavar="C", help="A new confidence, 0 to 1."),
) -> None:
    """Change a memory's text or its confidence.

    The text opens in $VISUAL or $EDITOR, unless --text gives it.
    """
    store = _store()
    memory = store.get(memory_id)
    if text is not None:
        new_text = _read_text(text)
    elif confidence is None:
        new_text = _edit_in_editor(memory.content)
    else:
        new_text = memory.content
    if not new_text.strip():
        raise UsageError(f"the new text of memory #{memory_id} is empty; it is unchanged (to delete it: zeph memory forget {memory_id})")
    updated = store.update(memory_id, content=new_text, confidence=confidence)
    if updated == memory:
        eprint(f"memory #{memory_id} unchanged")
    else:
        eprint(f"updated memory #{memory_id}")


@memory_app.command("archive")
def memory_archive(
    memory_id: int = typer.Argument(..., metavar="ID"),
    undo: bool = typer.Option(False, "--undo", help="Restore an archived memory."),
) -> None:
    """Archive a memory: kept, but no longer sent or searched.

    list --all still shows it; --undo restores it.
    """
    _store().archive(memory_id, archived=not undo)
    eprint(f"{'restored' if undo else 'archived'} memory #{memory_id}")


@memory_app.command("forget")
def memory_forget(
    memory_id: int = typer.Argument(..., metavar="ID"),
    yes: bool = typer.Option(False, "--yes", "-y", help="Do not ask for confirmation."),
) -> None:
    """Delete a memory for good."""
    store = _store()
    memory = store.get(memory_id)
    if not yes:
        if not sys.stdin.isatty():
            raise UsageError(f"forgetting memory #{memory_id} needs confirmation: add --yes")
        if not typer.confirm(f"forget memory #{memory_id} ({_preview(memory)})?", default=False):
            eprint("nothing forgotten")
            raise typer.Exit(1)
    store.forget(memory_id)
    eprint(f"forgot memory #{memory_id}")


def _register_reindex() -> None:
    from .reindex import register

    register(memory_app)


_register_reindex()
