"""`zeph sessions import`: another tool's chat history as zeph sessions, indexed for recall.

Invariant: the source is read and checked whole before anything is written (a bad line
stops the import with nothing stored, or with `--skip-bad` is left out and named); each
session is then looked up and written in one transaction, so an interrupted import keeps
whole sessions and running it again imports the rest, and of two imports running at once
each session is written by one and found by the other — nothing is ever stored twice. The messages are
then embedded as `zeph memory reindex` embeds them. Progress bars go to a terminal only.
"""

from __future__ import annotations

import json
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Optional

import typer

from ...errors import UsageError, ZephError
from .stderr import eprint, warning_line

if TYPE_CHECKING:
    from .importers.common import Skipped
    from ...store.imports import ImportedSession

SOURCES = ("jsonl", "llm")
SHOWN_BAD_LINES = 10


@dataclass
class ImportSummary:
    """What an import did (or, for a dry run, would do)."""

    source: str
    file: str
    sessions: list[dict] = field(default_factory=list)  # key, id (None in a dry run of a new one), new, added, already
    skipped: dict[str, int] = field(default_factory=dict)
    bad_lines: list[str] = field(default_factory=list)
    indexed: str = ""

    def count(self, what: str) -> int:
        return sum(s[what] for s in self.sessions)

    @property
    def new_sessions(self) -> int:
        return sum(1 for s in self.sessions if s["new"] and s["added"])

    @property
    def continued(self) -> int:
        return sum(1 for s in self.sessions if not s["new"] and s["added"])

    @property
    def already_there(self) -> int:
        """Sessions some of whose messages an earlier (or concurrent) import stored."""
        return sum(1 for s in self.sessions if not s["new"] and s["already"])

    def as_json(self) -> dict:
        return {
            "from": self.source, "file": self.file, "messages_added": self.count("added"),
            "messages_already_imported": self.count("already"), "sessions_new": self.new_sessions,
            "sessions_continued": self.continued, "sessions_already_imported": self.already_there,
            "skipped": self.skipped, "bad_lines": self.bad_lines, "sessions": self.sessions,
            "indexed": self.indexed or None,
        }


def _stderr_console():
    from rich.console import Console

    return Console(stderr=True)


def _bar(label: str, *, in_bytes: bool = False):
    from rich.progress import BarColumn, DownloadColumn, MofNCompleteColumn, Progress, TextColumn, TimeRemainingColumn

    count = DownloadColumn() if in_bytes else MofNCompleteColumn()
    return Progress(TextColumn(label), BarColumn(), count, TimeRemainingColumn(),
                    console=_stderr_console(), transient=True, disable=not sys.stderr.isatty())


def read_source(source: str, file: Optional[str], skip_bad: bool) -> tuple[list["ImportedSession"], "Skipped", list[str], str]:
    """The sessions in the source, what was skipped, the bad lines left out, and the source's name."""
    if source == "llm":
        from .importers.llm_logs import default_path, read_llm_logs

        path = Path(file) if file else default_path()
        history = read_llm_logs(path)
        return history.sessions, history.skipped, [], str(path)
    if not file:
        raise UsageError("which file? give a JSON Lines file (- reads standard input), or --from llm")
    from .importers.jsonl import read_jsonl

    if file == "-":
        return _jsonl(read_jsonl, sys.stdin.buffer, "standard input", None, skip_bad)
    path = Path(file)
    try:
        with path.open("rb") as stream:
            if stream.read(16) == b"SQLite format 3\x00":
                raise UsageError(f"{file} is an SQLite database, not JSON Lines: for llm's logs.db add --from llm")
            stream.seek(0)
            return _jsonl(read_jsonl, stream, file, path.stat().st_size, skip_bad)
    except OSError as exc:
        raise ZephError(f"cannot read {file}: {exc.strerror or exc}") from None


def _jsonl(read_jsonl, stream, name: str, size: int | None, skip_bad: bool):
    with _bar("reading", in_bytes=True) as bar:
        task = bar.add_task("reading", total=size)
        history = read_jsonl(stream, name, skip_bad=skip_bad, progress=lambda n: bar.advance(task, n))
    if not history.sessions and not history.skipped:
        raise ZephError(f"{name} holds no messages ({history.lines:,} lines)")
    return history.sessions, history.skipped, history.bad_lines, name


def import_history(source: str, file: Optional[str], *, skip_bad: bool, index: bool, dry_run: bool) -> ImportSummary:
    from .command_context import load, open_store
    from ...store.imports import imported_sessions, pending, write_session

    if source not in SOURCES:
        raise UsageError(f"--from {source!r} is not a source zeph reads: use jsonl or llm")
    loaded = load()
    sessions, skipped, bad_lines, name = read_source(source, file, skip_bad)
    summary = ImportSummary(source, name, skipped={k: v for k, v in skipped.items() if v}, bad_lines=bad_lines)
    store = open_store()
    try:
        known = imported_sessions(store.db, source) if dry_run else {}
        total = sum(len(s.messages) for s in sessions)
        with _bar("importing") as bar:
            task = bar.add_task("importing", total=total)
            try:
                for session in sessions:
                    if dry_run:
                        before = known.get(session.key)
                        added = len(pending(store.db, session, before))
                        summary.sessions.append({"key": session.key, "id": before, "new": before is None,
                                                 "added": added, "already": len(session.messages) - added})
                    else:
                        written = write_session(store.db, session)  # looks the session up under the write lock
                        summary.sessions.append({"key": session.key, "id": written.conversation_id or None,
                                                 "new": written.created, "added": written.added,
                                                 "already": written.already})
                    bar.advance(task, len(session.messages))
            except KeyboardInterrupt:
                if not dry_run:
                    eprint(f"zeph: {len(summary.sessions):,} of {len(sessions):,} sessions were imported whole "
                           f"({summary.count('added'):,} messages); the same command imports the rest")
                raise
        if dry_run or not summary.count("added"):
            return summary
        if not index:
            summary.indexed = "not indexed (--no-index): `zeph memory reindex` embeds them for recall"
        elif not loaded.config.memory.semantic.enabled:
            summary.indexed = "not indexed: semantic recall is off (memory.semantic.enabled)"
        else:
            from ...features.memory.reindex import ReindexError, index_messages  # a command of its own

            try:
                summary.indexed = index_messages(loaded, store)
            except ReindexError as exc:
                _print(summary, json_output=False)
                raise ReindexError(f"the messages were imported, but {exc}; `zeph memory reindex` resumes it") from None
        return summary
    finally:
        store.close()


def _print(summary: ImportSummary, *, json_output: bool, dry_run: bool = False) -> None:
    if json_output:
        print(json.dumps({**summary.as_json(), "dry_run": dry_run}, indent=2, ensure_ascii=False))
        return
    from .importers.common import Skipped

    added, already = summary.count("added"), summary.count("already")
    verb = "would import" if dry_run else "imported"
    line = f"{verb} {added:,} message{'s' if added != 1 else ''} from {summary.file}"
    sessions = [f"{summary.new_sessions:,} new session{'s' if summary.new_sessions != 1 else ''}"]
    if summary.continued:
        sessions.append(f"{summary.continued:,} continued")
    line += f" ({', '.join(sessions)})"
    print(line)
    if already:
        there = summary.already_there
        print(f"already imported: {already:,} message{'s' if already != 1 else ''} "
              f"({there:,} session{'s' if there != 1 else ''}), not stored again")
    skipped = Skipped(summary.skipped).describe()
    if skipped:
        print(f"skipped: {skipped}")
    if summary.indexed:
        print(summary.indexed)


def _warn_bad_lines(summary: ImportSummary) -> None:
    for line in summary.bad_lines[:SHOWN_BAD_LINES]:
        eprint(warning_line(f"{summary.file} {line} (left out)"))
    more = len(summary.bad_lines) - SHOWN_BAD_LINES
    if more > 0:
        eprint(warning_line(f"{more:,} more bad lines left out (--json lists them all)"))


def register(app: typer.Typer) -> None:
    @app.command("import")
    def sessions_import(
        file: Optional[str] = typer.Argument(
            None, metavar="FILE",
            help="JSON Lines, one message a line (- reads standard input); with --from llm, llm's logs.db "
                 "(default: the one llm uses).",
        ),
        source: str = typer.Option("jsonl", "--from", metavar="SOURCE", help="jsonl (JSON Lines) or llm (simonw/llm's logs.db)."),
        skip_bad: bool = typer.Option(False, "--skip-bad", help="Leave out lines that cannot be imported (each is named) instead of importing nothing."),
        no_index: bool = typer.Option(False, "--no-index", help="Do not embed the messages for recall now (zeph memory reindex does)."),
        dry_run: bool = typer.Option(False, "--dry-run", help="Check the source and say what would be imported; store nothing."),
        json_output: bool = typer.Option(False, "--json", help="Print the summary as JSON (with each session's key and id)."),
    ) -> None:
        """Import a chat history (JSON Lines or llm's logs.db).

        Importing it again adds only what is new.

        Each JSON line is one message: "session" (any key; lines with the same key make one session),
        "role" (user or assistant; system and tool lines are skipped), "content", and optionally
        "timestamp" (ISO 8601, kept as the message's time; without an offset, UTC), "id" (the source's
        id, kept with the message) and "title". The imported messages are indexed for recall.
        """
        summary = import_history(source, file, skip_bad=skip_bad, index=not no_index, dry_run=dry_run)
        _warn_bad_lines(summary)
        _print(summary, json_output=json_output, dry_run=dry_run)
