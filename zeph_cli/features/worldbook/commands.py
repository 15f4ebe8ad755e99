"""`zeph worldbook`: list, add, edit, remove and switch worldbook entries; isolate a session.

Invariant: presentation only — every command goes through `WorldbookStore` (imported inside the
command, so `zeph --help` stays light), and every bad id, position, depth, regex, session or
empty content ends as one `zeph: error:` line with a non-zero exit, the entries untouched.
"""

from __future__ import annotations

import json
import tomllib
from pathlib import Path
from typing import TYPE_CHECKING, Any, Optional

import typer

from ...errors import UsageError, ZephError
from ...paths import home_relative
from ...frontends.cli.stderr import eprint

if TYPE_CHECKING:
    from ...store import ConversationStore
    from .store import WorldbookRecord, WorldbookStore

worldbook_app = typer.Typer(
    help="Worldbook: entries sent when their keywords come up.\n\n"
    "An entry without keywords is always sent; each goes at a chosen place in the request.",
    no_args_is_help=True,
)

POSITION_HELP = "before | after (the system prompt), an_top | outlet | an_bottom (the per-turn context), at_depth (into the history)"
PREVIEW_CHARS = 80
EDITABLE = ("keywords", "regex", "case_sensitive", "position", "depth", "order", "enabled", "content")


def _stores() -> tuple["WorldbookStore", "ConversationStore"]:
    from ...frontends.cli.command_context import open_store
    from .store import WorldbookStore

    conversations = open_store()
    return WorldbookStore(conversations.db), conversations


def _project_root() -> str:
    from ..memory.long_term_access import project_root_of

    return project_root_of(Path.cwd())[0]


def _session(conversations: "ConversationStore", session: Optional[int]) -> int:
    """The session ID given (checked), else the most recent one."""
    if session is not None:
        try:
            return conversations.get_conversation(session).id
        except ZephError:
            raise UsageError(f"--session {session}: no session with that id (see `zeph sessions list`)") from None
    latest = conversations.latest_conversation()
    if latest is None:
        raise UsageError('no session yet: start one with zeph ask "…"')
    return latest.id


def _position(value: Optional[str]) -> Optional[str]:
    from .store import POSITIONS

    if value is not None and value not in POSITIONS:
        raise UsageError(f"--position {value!r} is not a position: use {', '.join(POSITIONS)}")
    return value


def _where(record: "WorldbookRecord") -> str:
    if record.scope == "session":
        return f"session {record.conversation_id}"
    return home_relative(record.project_root or "")


def _preview(text: str) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= PREVIEW_CHARS else flat[: PREVIEW_CHARS - 1] + "…"


def _triggers(record: "WorldbookRecord") -> str:
    if not record.keywords:
        return "(always)"
    flags = "".join(f for f, on in (("regex ", record.regex), ("case ", record.case_sensitive)) if on)
    return flags + ", ".join(record.keywords)


def _line(record: "WorldbookRecord") -> str:
    position = f"at_depth {record.depth}" if record.position == "at_depth" else record.position
    state = "on" if record.enabled else "off"
    return (f"#{record.id}\t{state}\t{position}\torder {record.order}\t{_where(record)}\t{_triggers(record)}\t"
            f"{_preview(record.content)}")


@worldbook_app.command("list")
def worldbook_list(
    json_output: bool = typer.Option(False, "--json", help="Print JSON."),
    everything: bool = typer.Option(False, "--all", help="Every project's and session's entries."),
    session: Optional[int] = typer.Option(None, "--session", metavar="ID", help="Also this session's entries (default: the most recent session)."),
) -> None:
    """List the entries bound to this project and to a session.

    Entries switched on and off; --all lists every project's and session's.
    """
    store, conversations = _stores()
    if everything:
        records = store.list()
    else:
        latest = conversations.latest_conversation()
        sid = _session(conversations, session) if session is not None or latest else None
        records = store.list(_project_root(), sid if sid is not None else -1)
    if json_output:
        print(json.dumps([r.as_json() for r in records], indent=2, ensure_ascii=False))
        return
    if not records:
        eprint('no worldbook entries here yet: add one with zeph worldbook add --keyword WORD --content "…"')
        return
    for record in records:
        print(_line(record))


def _content(content: Optional[str], content_file: Optional[Path]) -> Optional[str]:
    if content is not None and content_file is not None:
        raise UsageError("give the content with --content or --content-file, not both")
    if content_file is not None:
        try:
            return content_file.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            raise UsageError(f"--content-file {content_file}: cannot read it ({getattr(exc, 'strerror', None) or exc})") from None
    if content == "-":
        from ...frontends.cli.command_context import read_stdin

        return read_stdin()
    return content


@worldbook_app.command("add")
def worldbook_add(
    keyword: list[str] = typer.Option([], "--keyword", "-k", metavar="KEYWORD", help="A trigger (repeatable); none = always on."),
    regex: bool = typer.Option(False, "--regex", help="The keywords are regular expressions."),
    case_sensitive: bool = typer.Option(False, "--case-sensitive", help="Match the keywords' case (default: ignore it)."),
    content: Optional[str] = typer.Option(None, "--content", metavar="TEXT", help="The text to send; - reads standard input."),
    content_file: Optional[Path] = typer.Option(None, "--content-file", metavar="FILE", help="Read the text from this file."),
    position: str = typer.Option("an_top", "--position", metavar="POSITION", help=POSITION_HELP + "."),
    depth: Optional[int] = typer.Option(None, "--depth", metavar="N", help="For at_depth: messages from the end of the history (0 = after the last)."),
    order: int = typer.Option(100, "--order", metavar="N", help="Lower comes first in its block; the highest are left out first when the share is full."),
    off: bool = typer.Option(False, "--off", help="Add it switched off."),
    session: Optional[int] = typer.Option(None, "--session", metavar="ID", help="Bind it to this session (default: to this project)."),
) -> None:
    """Add an entry to this project or to one session.

    It is bound to this project (its workspace root) unless --session names a session; prints its id.
    """
    _position(position)
    if depth is not None and position != "at_depth":
        raise UsageError(f"--depth goes with --position at_depth, not {position}")
    text = _content(content, content_file)
    if text is None:
        raise UsageError("an entry needs its text: --content TEXT, --content-file PATH or --content - (standard input)")
    store, conversations = _stores()
    sid = _session(conversations, session) if session is not None else None
    record = store.add(
        text, keywords=keyword, regex=regex, case_sensitive=case_sensitive, position=position, depth=depth or 0,
        order=order, enabled=not off, project_root=None if sid is not None else _project_root(), conversation_id=sid,
    )
    eprint(f"added worldbook entry #{record.id} ({_where(record)}, {record.position}, {_triggers(record)})")
    print(record.id)


def _as_toml(record: "WorldbookRecord") -> str:
    import tomli_w

    data = {k: v for k, v in record.as_json().items() if k in EDITABLE and k != "content"}
    head = f"# zeph worldbook entry #{record.id}: edit and save; position: {POSITION_HELP}\n"
    return head + tomli_w.dumps(data) + "content = " + json.dumps(record.content, ensure_ascii=False) + "\n"


def _from_toml(text: str, entry_id: int) -> dict[str, Any]:
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise UsageError(f"entry #{entry_id} as edited is not valid TOML ({exc}); it is unchanged") from None
    unknown = sorted(set(data) - set(EDITABLE))
    if unknown:
        raise UsageError(f"entry #{entry_id}: unknown key {unknown[0]!r} (keys: {', '.join(EDITABLE)}); it is unchanged")
    kinds = {"keywords": list, "regex": bool, "case_sensitive": bool, "position": str, "depth": int, "order": int,
             "enabled": bool, "content": str}
    for key, value in data.items():
        if not isinstance(value, kinds[key]) or (kinds[key] is int and isinstance(value, bool)):
            raise UsageError(f"entry #{entry_id}: {key} must be a {kinds[key].__name__}; it is unchanged")
    if "keywords" in data and not all(isinstance(k, str) for k in data["keywords"]):
        raise UsageError(f"entry #{entry_id}: keywords must be a list of strings; it is unchanged")
    return data


def _edit_in_editor(record: "WorldbookRecord") -> dict[str, Any]:
    from ...frontends.cli.editor import edit_in_editor

    text = edit_in_editor(
        _as_toml(record), filename=f"worldbook-{record.id}.toml", unchanged=f"entry #{record.id}",
        instead="change the entry with flags (see --help)",
    )
    return _from_toml(text, record.id)


@worldbook_app.command("edit")
def worldbook_edit(
    entry_id: int = typer.Argument(..., metavar="ID"),
    keyword: list[str] = typer.Option([], "--keyword", "-k", metavar="KEYWORD", help="New triggers, replacing the old ones (repeatable)."),
    constant: bool = typer.Option(False, "--always", help="Drop the keywords: always on."),
    regex: Optional[bool] = typer.Option(None, "--regex/--plain", help="Keywords are regexes / plain text."),
    case_sensitive: Optional[bool] = typer.Option(None, "--case-sensitive/--ignore-case", help="Match case or not."),
    content: Optional[str] = typer.Option(None, "--content", metavar="TEXT", help="New text; - reads standard input."),
    content_file: Optional[Path] = typer.Option(None, "--content-file", metavar="FILE", help="Read the new text from this file."),
    position: Optional[str] = typer.Option(None, "--position", metavar="POSITION", help=POSITION_HELP + "."),
    depth: Optional[int] = typer.Option(None, "--depth", metavar="N", help="For at_depth: messages from the end of the history."),
    order: Optional[int] = typer.Option(None, "--order", metavar="N", help="New order."),
    on: Optional[bool] = typer.Option(None, "--on/--off", help="Switch it on or off."),
) -> None:
    """Change an entry with flags, or in an editor.

    With no flags, the entry opens in $VISUAL or $EDITOR as TOML.
    """
    store, _ = _stores()
    record = store.get(entry_id)
    if keyword and constant:
        raise UsageError("--keyword and --always do not go together")
    _position(position)
    if depth is not None and (position or record.position) != "at_depth":
        raise UsageError(f"--depth goes with --position at_depth (entry #{entry_id} is {position or record.position})")
    text = _content(content, content_file)
    flags = {"keywords": keyword or ([] if constant else None), "regex": regex, "case_sensitive": case_sensitive,
             "content": text, "position": position, "depth": depth, "order": order, "enabled": on}
    changes = {k: v for k, v in flags.items() if v is not None}
    if not changes:
        changes = _edit_in_editor(record)
    updated = store.update(entry_id, **changes)
    eprint(f"worldbook entry #{entry_id} unchanged" if updated == record else f"updated worldbook entry #{entry_id}")


@worldbook_app.command("remove")
def worldbook_remove(entry_id: int = typer.Argument(..., metavar="ID")) -> None:
    """Delete an entry for good."""
    record = _stores()[0].remove(entry_id)
    eprint(f"removed worldbook entry #{entry_id} ({_preview(record.content)})")


def _switch(entry_id: int, enabled: bool) -> None:
    _stores()[0].update(entry_id, enabled=enabled)
    eprint(f"worldbook entry #{entry_id} is {'on' if enabled else 'off'}")


@worldbook_app.command("on")
def worldbook_on(entry_id: int = typer.Argument(..., metavar="ID")) -> None:
    """Switch an entry on."""
    _switch(entry_id, True)


@worldbook_app.command("off")
def worldbook_off(entry_id: int = typer.Argument(..., metavar="ID")) -> None:
    """Switch an entry off (kept, not sent)."""
    _switch(entry_id, False)


@worldbook_app.command("isolate")
def worldbook_isolate(
    state: str = typer.Argument(..., metavar="STATE", help="on or off."),
    session: Optional[int] = typer.Option(None, "--session", metavar="ID", help="The session (default: the most recent)."),
) -> None:
    """Switch isolation mode on or off for a session.

    With worldbook entries in force, no long-term memory, recall, skills, MCP or memory tools are
    sent (docs/worldbook.md).
    """
    from .store import ISOLATED_KEY

    if state not in ("on", "off"):
        raise UsageError(f"isolate takes on or off, not {state!r}")
    store, conversations = _stores()
    sid = _session(conversations, session)
    conversations.set_metadata(sid, ISOLATED_KEY, True if state == "on" else None)
    bound = list(store.in_force(_project_root(), sid))
    eprint(f"session {sid}: worldbook isolation {state}"
           + ("" if state == "off" or bound else " (no worldbook entries are in force here, so nothing is dropped yet)"))
