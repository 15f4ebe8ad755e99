"""`zeph profile`: show, edit and clear the user profile (`<user_profile_memory>`), and list the
session summaries (`<recent_conversation_memory>`) it is made from.

Invariant: presentation only — every command goes through `DigestStore` (imported inside
the command, so `zeph --help` stays light); bad input, an editor that fails or saves
nothing leaves the profile unchanged and ends as one `zeph:` line with a non-zero exit.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Optional

import typer

from .errors import UsageError
from .stderr import eprint

if TYPE_CHECKING:
    from .store.digests import DigestStore

profile_app = typer.Typer(
    help="The user profile sent with every turn (<user_profile_memory>) and the session summaries it comes from.",
    no_args_is_help=True,
)


def _store() -> "DigestStore":
    from .command_context import open_store
    from .store.digests import DigestStore

    return DigestStore(open_store().db)


def _when(stamp: str) -> str:
    from .render import short_time

    return short_time(stamp) + " UTC" if stamp else "never"


@profile_app.command("show")
def profile_show(json_output: bool = typer.Option(False, "--json", help="Print JSON.")) -> None:
    """Print the profile's text; when it was updated and by whom (auto or user) go to standard error."""
    profile = _store().profile()
    if json_output:
        data = None if profile is None else {
            "text": profile.text, "source": profile.source, "updated_at": profile.updated_at,
            "auto_update_attempted_at": profile.attempted_at,
        }
        print(json.dumps(data, indent=2, ensure_ascii=False))
        return
    if profile is None or not profile.text.strip():
        eprint("no user profile yet: it is made from the session summaries (see zeph profile sessions) at most "
               "once a day, or write one with zeph profile edit")
        return
    from .command_context import load

    who = "by you" if profile.source == "user" else "automatically from the session summaries"
    off = "" if load().config.memory.profile.enabled else "; not sent: [memory.profile] enabled = false"
    eprint(f"updated {_when(profile.updated_at)}, {who} ({profile.source}){off}")
    print(profile.text)


def _edit_in_editor(content: str) -> str:
    from .editor import edit_in_editor

    return edit_in_editor(
        content + "\n" if content else "", filename="PROFILE.md", unchanged="the profile", instead="give the new text with --text"
    )


@profile_app.command("edit")
def profile_edit(
    text: Optional[str] = typer.Option(None, "--text", help="The new text (no editor); - reads standard input."),
) -> None:
    """Change the profile in $VISUAL or $EDITOR (or with --text). Your text is kept as yours and is
    where the next automatic update starts."""
    from .command_context import read_stdin
    from .context.session_memory_blocks import PROFILE_MAX_TOKENS
    from .tokens import default_counter

    store = _store()
    current = store.profile()
    old = current.text if current is not None else ""
    if text is None:
        new = _edit_in_editor(old)
    else:
        new = read_stdin() if text == "-" else text
    new = new.strip()
    if not new:
        raise UsageError("the new profile text is empty; the profile is unchanged (to empty it: zeph profile clear)")
    if new == old.strip():
        eprint("profile unchanged")
        return
    store.set_profile(new, "user")
    tokens = default_counter().count(new)
    eprint("updated the user profile")
    if tokens > PROFILE_MAX_TOKENS:
        eprint(f"zeph: warning: the profile is {tokens} tokens; only about the first {PROFILE_MAX_TOKENS} are sent")


@profile_app.command("clear")
def profile_clear(yes: bool = typer.Option(False, "--yes", "-y", help="Do not ask for confirmation.")) -> None:
    """Empty the profile. With [memory.profile] enabled, a later automatic update makes a new one from the
    session summaries; set enabled = false to keep it empty."""
    store = _store()
    profile = store.profile()
    if profile is None or not profile.text.strip():
        eprint("the user profile is already empty")
        return
    if not yes:
        if not sys.stdin.isatty():
            raise UsageError("clearing the user profile needs confirmation: add --yes")
        if not typer.confirm("clear the user profile?", default=False):
            eprint("the profile is unchanged")
            raise typer.Exit(1)
    store.clear_profile()
    eprint("cleared the user profile")


@profile_app.command("sessions")
def profile_sessions(json_output: bool = typer.Option(False, "--json", help="Print JSON.")) -> None:
    """List the session summaries, newest first; `*` marks those a new session here would be sent."""
    from .command_context import load
    from .tools.confinement import workspace_root

    config = load().config.memory.cross_session
    store = _store()
    project = str(workspace_root(Path.cwd()))
    limit = config.max_summaries if config.enabled else 0
    sent = {d.conversation_id for d in store.recent(project=project, exclude=None, limit=limit)}
    digests = store.all()
    if json_output:
        print(json.dumps(
            [{"session": d.conversation_id, "title": d.title, "project": d.project, "user_turns": d.user_turns,
              "updated_at": d.updated_at, "text": d.text, "sent_here": d.conversation_id in sent} for d in digests],
            indent=2, ensure_ascii=False,
        ))
        return
    if not digests:
        eprint(f"no session summaries yet: a session is summarized after {config.min_user_turns} user turns"
               + ("" if config.enabled else " ([memory.cross_session] enabled = false: none are made)"))
        return
    for d in digests:
        mark = "*" if d.conversation_id in sent else " "
        print(f"{mark} #{d.conversation_id}\t{_when(d.updated_at)}\t{d.user_turns} turns\t{d.title}\t{d.project}")
        print(f"    {d.text}")
