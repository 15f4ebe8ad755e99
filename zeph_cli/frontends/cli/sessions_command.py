"""`zeph sessions`: list, show, search, export, import and delete conversations (presentation only).

Invariant: every command reads and writes through `ConversationStore` (`open_store`), imported only when
`zeph sessions` is named on the command line; output on a terminal is rendered, elsewhere it is plain.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Optional

import typer

from .command_context import open_store, stdout_is_terminal
from ...errors import UsageError, ZephError
from .stderr import eprint

if TYPE_CHECKING:
    from ...store import Conversation, ConversationStore
    from ...store.export import Nested

sessions_app = typer.Typer(help="List, show, search, export, import and delete conversations.", no_args_is_help=True)


@sessions_app.command("list")
def sessions_list(
    limit: int = typer.Option(30, "--limit", "-n", min=1, metavar="N", help="How many sessions to show."),
    json_output: bool = typer.Option(False, "--json", help="Print JSON."),
    subagents: bool = typer.Option(
        False, "--subagents", help="Also list sub-agents' sessions (`zeph sessions show` shows them under their parent)."
    ),
) -> None:
    """List recent sessions, newest first."""
    from ..render import short_time

    store = open_store()
    conversations = store.list_conversations(limit, subagents=subagents)
    if json_output:
        print(json.dumps([c.__dict__ for c in conversations], indent=2, ensure_ascii=False))
        return
    if not conversations:
        eprint('no sessions yet: start one with zeph ask "…"')
        return
    from rich.console import Console
    from rich.table import Table

    table = Table(box=None, pad_edge=False)
    for column in ("id", "updated", "messages", "model", "title"):
        table.add_column(column, justify="right" if column in ("id", "messages") else "left", no_wrap=column != "title")
    for c in conversations:
        table.add_row(str(c.id), short_time(c.updated_at), str(c.message_count), c.model, c.title)
    Console().print(table)


def resolve_session(store: "ConversationStore", session_id: Optional[int], last: bool) -> "Conversation":
    """The session an ID or `--last` names (one of them, not both)."""
    from ...errors import NotFound

    if session_id is not None and last:
        raise UsageError("give either a session ID or --last, not both")
    if session_id is not None:
        return store.get_conversation(session_id)
    if last:
        conversation = store.latest_conversation()
        if conversation is None:
            raise NotFound('no sessions yet: start one with zeph ask "…"')
        return conversation
    raise UsageError("which session? give an ID (see `zeph sessions list`) or --last")


@sessions_app.command("show")
def sessions_show(
    session_id: Optional[int] = typer.Argument(None, metavar="ID", help="Session ID."),
    last: bool = typer.Option(False, "--last", help="Show the most recent session."),
) -> None:
    """Show a session's transcript.

    Everything the user can scroll back to, compacted originals included.
    """
    from ...store.export import conversation_markdown

    store = open_store()
    conversation = resolve_session(store, session_id, last)
    text = conversation_markdown(
        conversation, store.history(conversation.id, user_visible=True), subagent_transcripts(store, conversation.id)
    )
    if stdout_is_terminal():
        from rich.console import Console
        from rich.markdown import Markdown

        Console().print(Markdown(text))
    else:
        sys.stdout.write(text)


def subagent_transcripts(store: "ConversationStore", conversation_id: int, depth: int = 0) -> dict[str, "Nested"]:
    """The sessions of the sub-agents `conversation_id` started, by their task call id, theirs nested in turn."""
    from ...store.export import Nested

    if depth > 5:  # deeper than [agent.subagents] max_depth allows
        return {}
    return {
        str(child.metadata["subagent"].get("call_id")): Nested(
            child, store.history(child.id, user_visible=True), subagent_transcripts(store, child.id, depth + 1)
        )
        for child in store.subagent_sessions(conversation_id)
    }


@sessions_app.command("search")
def sessions_search(
    text: str = typer.Argument(..., metavar="TEXT", help="Words to find (full-text search)."),
    limit: int = typer.Option(20, "--limit", "-n", min=1, metavar="N"),
    json_output: bool = typer.Option(False, "--json", help="Print JSON."),
) -> None:
    """Find messages across all sessions."""
    from ..render import short_time

    hits = open_store().search(text, limit)
    if json_output:
        print(json.dumps([h.__dict__ for h in hits], indent=2, ensure_ascii=False))
        return
    if not hits:
        eprint(f"no messages match {text!r}")
        raise typer.Exit(1)
    for hit in hits:
        print(f"{hit.conversation_id}\t{short_time(hit.created_at)}\t{hit.role}\t{hit.title}\n    {' '.join(hit.snippet.split())}")


@sessions_app.command("export")
def sessions_export(
    session_id: int = typer.Argument(..., metavar="ID"),
    format: str = typer.Option("md", "--format", "-f", metavar="FORMAT", help="md or json."),
    output: Optional[Path] = typer.Option(None, "--output", "-o", metavar="FILE", help="Write to this file instead of stdout."),
) -> None:
    """Export a session as Markdown or JSON."""
    from ...store.export import conversation_json, conversation_markdown

    if format not in ("md", "json"):
        raise UsageError(f"--format {format!r} is not supported: use md or json")
    store = open_store()
    conversation = store.get_conversation(session_id)
    if format == "md":
        text = conversation_markdown(
            conversation, store.history(conversation.id, user_visible=True), subagent_transcripts(store, conversation.id)
        )
    else:
        text = json.dumps(conversation_json(conversation, store.history(conversation.id)), indent=2, ensure_ascii=False) + "\n"
    if output is None:
        sys.stdout.write(text)
        return
    try:
        output.write_text(text, encoding="utf-8")
    except OSError as exc:
        raise ZephError(f"cannot write {output}: {exc.strerror or exc}") from None
    eprint(f"exported session {session_id} to {output}")


@sessions_app.command("rm")
def sessions_rm(session_id: int = typer.Argument(..., metavar="ID")) -> None:
    """Delete a session and all its messages."""
    count = open_store().delete_conversation(session_id)
    eprint(f"deleted session {session_id} ({count} messages)")


def _register_import() -> None:
    from .sessions_import import register

    register(sessions_app)


_register_import()
