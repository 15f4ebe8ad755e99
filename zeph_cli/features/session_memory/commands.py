"""`zeph profile`: show, edit and clear the user profile (`<user_profile_memory>`), and list the
session summaries (`<recent_conversation_memory>`) it is made from.

Invariant: presentation only — every command goes through `DigestStore` (imported inside
the command, so `zeph --help` stays light); bad input, an editor that fails or saves
nothing leaves the profile unchanged and ends as one `zeph:` line with a non-zero exit.
What is not sent is said, with why: switched off (or off by default with the small embedded
summary model), discarded by the checks on generated text, or stored before them and failing them.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Optional

import typer

from ...errors import UsageError
from ...frontends.cli.stderr import eprint

if TYPE_CHECKING:
    from .store import DigestStore

profile_app = typer.Typer(
    help="The user profile and the session summaries it comes from.\n\n"
    "The profile is sent with every turn as <user_profile_memory>.",
    no_args_is_help=True,
)


def _store() -> "DigestStore":
    from ...frontends.cli.command_context import open_store
    from .store import DigestStore

    return DigestStore(open_store().db)


def _when(stamp: str | None) -> str:
    from ...frontends.render import short_time

    return short_time(stamp) + " UTC" if stamp else "never"


def _of_turns(turns: int) -> str:
    return f" of {turns} turn{'s' * (turns != 1)}" if turns else ""


def _off(section: str, enabled: bool | None, small: str) -> str:
    """Why the section's text is neither made nor sent ("" when it is on)."""
    if enabled is False:
        return f"[memory.{section}] enabled = false"
    if enabled is None and small:
        return (f"the summary model is the small embedded one ({small}); configure a summary provider to turn it on "
                "(zeph context says how)")
    return ""


def _small_summarizer(loaded) -> str:
    import os

    from ...providers.summary import small_summarizer

    return small_summarizer(loaded.config, os.environ, loaded.sources)


def _failing(text: str, what: str) -> str:
    """Why a stored automatic text is not sent ("" when it passes the checks)."""
    from ...context.generated_check import check_stored
    from ...context.session_memory_blocks import instructions

    return check_stored(text, what=what, instructions=instructions()).reason


@profile_app.command("show")
def profile_show(json_output: bool = typer.Option(False, "--json", help="Print JSON.")) -> None:
    """Print the profile's text.

    When it was updated and by whom (auto or user) go to standard error.
    """
    from ...frontends.cli.command_context import load

    store = _store()
    profile = store.profile()
    loaded = load()
    enabled = loaded.config.memory.profile.enabled
    off = _off("profile", enabled, _small_summarizer(loaded) if enabled is None else "")
    failing = _failing(profile.text, "profile") if profile is not None and profile.source == "auto" else ""
    if json_output:
        data = None if profile is None else {
            "text": profile.text, "source": profile.source, "updated_at": profile.updated_at,
            "auto_update_attempted_at": profile.attempted_at, "sent": bool(profile.text.strip()) and not off and not failing,
            "not_sent_because": off or failing, "last_update_discarded": profile.discarded or None,
            "last_update_discarded_at": profile.discarded_at,
        }
        print(json.dumps(data, indent=2, ensure_ascii=False))
        return
    if profile is None or not profile.text.strip():
        eprint("no user profile yet: it is made from the session summaries (see zeph profile sessions) at most "
               "once a day, or write one with zeph profile edit" + (f"; not made: {off}" if off else ""))
    else:
        who = "by you" if profile.source == "user" else "automatically from the session summaries"
        why = off or (f"it fails the checks on generated text: {failing}" if failing else "")
        eprint(f"updated {_when(profile.updated_at)}, {who} ({profile.source})" + (f"; not sent: {why}" if why else ""))
    if profile is not None and profile.discarded:
        eprint(f"the last automatic update ({_when(profile.discarded_at)}) was discarded: {profile.discarded}")
    discarded = len(store.discards())
    if discarded:
        eprint(f"{discarded} session summar{'y was' if discarded == 1 else 'ies were'} discarded: zeph profile sessions "
               "says why")
    if profile is not None and profile.text.strip():
        print(profile.text)


def _edit_in_editor(content: str) -> str:
    from ...frontends.cli.editor import edit_in_editor

    return edit_in_editor(
        content + "\n" if content else "", filename="PROFILE.md", unchanged="the profile", instead="give the new text with --text"
    )


@profile_app.command("edit")
def profile_edit(
    text: Optional[str] = typer.Option(None, "--text", metavar="TEXT", help="The new text (no editor); - reads standard input."),
) -> None:
    """Change the profile in $VISUAL or $EDITOR (or with --text).

    Your text is kept as yours and is where the next automatic update starts.
    """
    from ...frontends.cli.command_context import read_stdin
    from ...context.session_memory_blocks import PROFILE_MAX_TOKENS
    from ...tokens import default_counter

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
    """Empty the profile.

    With [memory.profile] enabled, a later automatic update makes a new one from the session
    summaries; set enabled = false to keep it empty.
    """
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
    """List the session summaries, newest first.

    `*` marks those a new session here would be sent.
    """
    from ...frontends.cli.command_context import load
    from ...tools.confinement import workspace_root

    loaded = load()
    config = loaded.config.memory.cross_session
    off = _off("cross_session", config.enabled, _small_summarizer(loaded) if config.enabled is None else "")
    store = _store()
    project = str(workspace_root(Path.cwd()))
    limit = 0 if off else config.max_summaries
    failing = {d.conversation_id: _failing(d.text, "summary") for d in store.all()}
    candidates = store.recent(project=project, exclude=None, limit=limit * 2)
    sent = set([d.conversation_id for d in candidates if not failing.get(d.conversation_id)][:limit])
    digests = store.all()
    discards = store.discards()
    if json_output:
        print(json.dumps(
            [{"session": d.conversation_id, "title": d.title, "project": d.project, "user_turns": d.user_turns,
              "updated_at": d.updated_at, "text": d.text, "sent_here": d.conversation_id in sent,
              "not_sent_because": off or failing.get(d.conversation_id) or None,
              "last_summary_discarded": d.discarded or None, "last_summary_discarded_at": d.discarded_at,
              "last_summary_discarded_turns": d.discarded_turns or None}
             for d in digests]
            + [{"session": d.conversation_id, "title": d.title, "project": d.project, "user_turns": d.user_turns,
                "updated_at": None, "text": "", "sent_here": False, "not_sent_because": None,
                "last_summary_discarded": d.discarded, "last_summary_discarded_at": d.discarded_at,
                "last_summary_discarded_turns": d.discarded_turns or None}
               for d in discards if not d.text],
            indent=2, ensure_ascii=False,
        ))
        return
    if not digests and not discards:
        eprint(f"no session summaries yet: a session is summarized after {config.min_user_turns} user turns"
               + (f"; none are made: {off}" if off else ""))
        return
    if off:
        eprint(f"session summaries are off (none are made or sent): {off}")
    for d in digests:
        mark = "*" if d.conversation_id in sent else " "
        print(f"{mark} #{d.conversation_id}\t{_when(d.updated_at)}\t{d.user_turns} turns\t{d.title}\t{d.project}")
        print(f"    {d.text}")
        if failing.get(d.conversation_id):
            print(f"    not sent: it fails the checks on generated text: {failing[d.conversation_id]}")
        if d.discarded:
            print(f"    a newer summary{_of_turns(d.discarded_turns)} ({_when(d.discarded_at)}) was discarded: {d.discarded}")
    for d in discards:
        if not d.text:
            print(f"  #{d.conversation_id}\t{_when(d.discarded_at)}\t{d.discarded_turns} turns\t{d.title}\t{d.project}")
            print(f"    no summary: the one made was discarded: {d.discarded}")
