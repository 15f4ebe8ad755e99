"""Cross-session digests and the user profile on disk (tables of m012, with m013's record of discards and
m014's turns a discarded summary covered).

Invariant: one digest row per conversation (deleted with it) and at most one
profile row; a failed attempt moves `attempted_at` and never the text; a
discarded one also records why (`discarded`, cleared when a text is next
stored) and the turns it covered (`discarded_turns`), never touching the kept
text, its `user_turns` or `updated_at`; reads return only digests with text,
newest first, the given project's first (`discards()` lists the discarded).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from ...store.sqlite import Database

from ...store.conversations import now_iso
from ...store.transactions import write_transaction

PROFILE_SOURCES = ("auto", "user")


@dataclass(frozen=True)
class SessionDigest:
    """The summary of one session, sent to other sessions."""
    conversation_id: int
    project: str
    text: str
    user_turns: int
    updated_at: str
    attempted_at: str
    title: str = ""  # the conversation's title, for showing
    discarded: str = ""  # why the last summary made was discarded ("" = none since the text was stored)
    discarded_at: str | None = None
    discarded_turns: int = 0  # the user turns the discarded summary covered (0 = none since the text was stored)

    @property
    def seen_turns(self) -> int:
        """The user turns a summary was made of, kept or discarded: the same turns would make the same one."""
        return max(self.user_turns, self.discarded_turns)


@dataclass(frozen=True)
class UserProfile:
    """The user profile kept from session summaries, or written by the user."""
    text: str
    source: str  # auto | user
    updated_at: str
    attempted_at: str | None
    discarded: str = ""  # why the last automatic update was discarded ("" = none since the text was stored)
    discarded_at: str | None = None


_SELECT_DIGESTS = (
    "select d.conversation_id, d.project, d.text, d.user_turns, d.updated_at, d.attempted_at, c.title, d.discarded, "
    "d.discarded_at, d.discarded_turns from session_digests d join conversations c on c.id = d.conversation_id "
)
_PROFILE_COLUMNS = "text, source, updated_at, attempted_at, discarded, discarded_at"


class DigestStore:
    def __init__(self, db: Database) -> None:
        self.db = db

    # ---- digests --------------------------------------------------------------------------

    def _digests(self, condition: str, params: Sequence[object] = ()) -> list[SessionDigest]:
        """The digests (with their session's title) `condition` (a where clause and its order) selects."""
        return [SessionDigest(*row) for row in self.db.execute(_SELECT_DIGESTS + condition, list(params)).fetchall()]

    def user_turns(self, conversation_id: int) -> int:
        """User messages stored in the conversation (compacted ones included: they were turns)."""
        (count,) = self.db.execute(
            "select count(*) from messages where conversation_id = ? and role = 'user'", [conversation_id]
        ).fetchone()
        return count

    def get(self, conversation_id: int) -> SessionDigest | None:
        found = self._digests("where d.conversation_id = ?", [conversation_id])
        return found[0] if found else None

    def save(self, conversation_id: int, project: str, text: str, user_turns: int, at: str | None = None) -> None:
        """Store the conversation's digest text, covering `user_turns` turns."""
        at = at or now_iso()
        with write_transaction(self.db):
            self.db.execute(
                "insert into session_digests (conversation_id, project, text, user_turns, updated_at, attempted_at) "
                "values (?, ?, ?, ?, ?, ?) on conflict (conversation_id) do update set project = excluded.project, "
                "text = excluded.text, user_turns = excluded.user_turns, updated_at = excluded.updated_at, "
                "attempted_at = excluded.attempted_at, discarded = '', discarded_at = null, discarded_turns = 0",
                [conversation_id, project, text, user_turns, at, at],
            )

    def attempted(self, conversation_id: int, project: str, at: str | None = None) -> None:
        """A summarizing attempt that gave nothing usable: the text stays, the clock moves."""
        at = at or now_iso()
        with write_transaction(self.db):
            self.db.execute(
                "insert into session_digests (conversation_id, project, text, user_turns, updated_at, attempted_at) "
                "values (?, ?, '', 0, ?, ?) on conflict (conversation_id) do update set attempted_at = excluded.attempted_at",
                [conversation_id, project, at, at],
            )

    def discard(self, conversation_id: int, project: str, reason: str, user_turns: int, at: str | None = None) -> None:
        """A summary of `user_turns` turns that failed the checks: the kept text and the turns it covers stay, the
        clock moves, the reason and the turns the discarded one covered are kept (the same turns would make the
        same summary: tried again after more)."""
        at = at or now_iso()
        with write_transaction(self.db):
            self.db.execute(
                "insert into session_digests (conversation_id, project, text, user_turns, updated_at, attempted_at, "
                "discarded, discarded_at, discarded_turns) values (?, ?, '', 0, ?, ?, ?, ?, ?) "
                "on conflict (conversation_id) do update set attempted_at = excluded.attempted_at, "
                "discarded = excluded.discarded, discarded_at = excluded.discarded_at, "
                "discarded_turns = excluded.discarded_turns",
                [conversation_id, project, at, at, reason, at, user_turns],
            )

    def discards(self) -> list[SessionDigest]:
        """The sessions whose last summary was discarded, newest discard first."""
        return self._digests("where d.discarded != '' order by d.discarded_at desc, d.conversation_id desc")

    def recent(self, *, project: str, exclude: int | None, limit: int) -> list[SessionDigest]:
        """Up to `limit` digests with text of other conversations: `project`'s newest first, then the rest."""
        if limit <= 0:
            return []
        return self._digests(
            "where d.text != '' and d.conversation_id != ? "
            "order by (d.project = ?) desc, d.updated_at desc, d.conversation_id desc limit ?",
            [exclude if exclude is not None else -1, project, limit],
        )

    def all(self) -> list[SessionDigest]:
        """Every digest with text, newest first."""
        return self._digests("where d.text != '' order by d.updated_at desc, d.conversation_id desc")

    def updated_since(self, since: str | None) -> int:
        """Digests written after `since` (all, for None)."""
        (count,) = self.db.execute(
            "select count(*) from session_digests where text != '' and updated_at > ?", [since or ""]
        ).fetchone()
        return count

    # ---- the user profile ------------------------------------------------------------------

    def profile(self) -> UserProfile | None:
        """The profile, or None when none was ever made (a cleared one has text "")."""
        row = self.db.execute(f"select {_PROFILE_COLUMNS} from user_profile where id = 1").fetchone()
        return UserProfile(*row) if row else None

    def set_profile(self, text: str, source: str, at: str | None = None) -> UserProfile:
        """Store the profile's text; an automatic update also records its attempt."""
        if source not in PROFILE_SOURCES:
            raise ValueError(f"profile source {source!r}: auto or user")
        at = at or now_iso()
        attempted = at if source == "auto" else None
        with write_transaction(self.db):
            self.db.execute(
                "insert into user_profile (id, text, source, updated_at, attempted_at) values (1, ?, ?, ?, ?) "
                "on conflict (id) do update set text = excluded.text, source = excluded.source, "
                "updated_at = excluded.updated_at, attempted_at = coalesce(excluded.attempted_at, attempted_at), "
                "discarded = '', discarded_at = null",
                [text, source, at, attempted],
            )
        profile = self.profile()
        assert profile is not None
        return profile

    def profile_attempted(self, at: str | None = None) -> None:
        """An automatic update that gave nothing usable: the text stays, the clock moves."""
        at = at or now_iso()
        with write_transaction(self.db):
            self.db.execute(
                "insert into user_profile (id, text, source, updated_at, attempted_at) values (1, '', 'auto', ?, ?) "
                "on conflict (id) do update set attempted_at = excluded.attempted_at",
                [at, at],
            )

    def discard_profile(self, reason: str, at: str | None = None) -> None:
        """An automatic update that failed the checks: the text stays, the clock moves, the reason is kept."""
        at = at or now_iso()
        with write_transaction(self.db):
            self.db.execute(
                "insert into user_profile (id, text, source, updated_at, attempted_at, discarded, discarded_at) "
                "values (1, '', 'auto', ?, ?, ?, ?) on conflict (id) do update set attempted_at = excluded.attempted_at, "
                "discarded = excluded.discarded, discarded_at = excluded.discarded_at",
                [at, at, reason, at],
            )

    def clear_profile(self) -> bool:
        """Empty the profile (kept as the user's: the next automatic update starts from nothing); True
        when there was text."""
        current = self.profile()
        if current is None or not current.text:
            return False
        self.set_profile("", "user")
        return True
