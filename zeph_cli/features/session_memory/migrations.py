"""Session summaries' and the user profile's tables (`session_digests`, `user_profile`).

Invariant: registered with the shared runner (`store/migrations.py`) under their numbers, which never
change: an existing database records them by name.
"""

from __future__ import annotations

from ...store.migrations import migration
from ...store.sqlite import Database


@migration
def m012_session_digests_and_user_profile(db: Database) -> None:
    # Cross-session summaries (ETOS 5): one short "what this thread is about" per conversation,
    # made in the background by the summary provider and sent to the other sessions; and the
    # user profile (ETOS 6): one text of stable preferences, made from the digests or edited.
    db.execute(
        """
        create table session_digests (
            conversation_id integer primary key references conversations(id) on delete cascade,
            project text not null,  -- the workspace root the session ran in
            text text not null,  -- '' until a summary succeeded
            user_turns integer not null,  -- the user turns the text covers (or the attempt saw)
            updated_at text not null,  -- when `text` was written
            attempted_at text not null  -- the last summarizing attempt, failed ones included
        )
        """
    )
    db.execute("create index session_digests_recent on session_digests (updated_at)")
    db.execute(
        """
        create table user_profile (
            id integer primary key check (id = 1),  -- one profile
            text text not null,
            source text not null check (source in ('auto', 'user')),
            updated_at text not null,  -- when `text` was written
            attempted_at text  -- the last automatic update's attempt
        )
        """
    )


@migration
def m013_discarded_generated_text(db: Database) -> None:
    # Why the last generated session summary or profile update was discarded (not about the user, a copied
    # reply, code, its own instructions…) and when: `zeph profile show` and `zeph profile sessions` say it.
    for table in ("session_digests", "user_profile"):
        db.execute(f"alter table {table} add column discarded text not null default ''")  # the reason; '' = none
        db.execute(f"alter table {table} add column discarded_at text")


@migration
def m014_discarded_summary_turns(db: Database) -> None:
    # The user turns a discarded session summary covered, apart from `user_turns` (the turns the kept text
    # covers): a discard leaves the kept summary as it was, and the same turns are not summarized again.
    db.execute("alter table session_digests add column discarded_turns integer not null default 0")
    # Before, a discard wrote its turns over `user_turns`: they are the discarded summary's, and a row without
    # text covers none.
    db.execute("update session_digests set discarded_turns = user_turns where discarded != ''")
    db.execute("update session_digests set user_turns = 0 where text = '' and discarded != ''")
