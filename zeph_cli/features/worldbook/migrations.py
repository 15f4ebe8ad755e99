"""The worldbook's table (`worldbook_entries`).

Invariant: registered with the shared runner (`store/migrations.py`) under its number, which never
changes: an existing database records it by name.
"""

from __future__ import annotations

from ...store.migrations import migration
from ...store.sqlite import Database


@migration
def m011_worldbook(db: Database) -> None:
    # Worldbook entries (ETOS block 7): content injected at a chosen position when a keyword of the
    # recent messages triggers it (no keywords = always), bound to a project or to one session.
    db.execute(
        """
        create table worldbook_entries (
            id integer primary key,
            scope text not null check (scope in ('project', 'session')),
            project_root text,  -- the workspace root, for scope = 'project'
            conversation_id integer references conversations(id) on delete cascade,  -- scope = 'session'
            keywords text not null default '[]',  -- JSON list; empty = constant (always on)
            regex integer not null default 0,
            case_sensitive integer not null default 0,
            content text not null,
            position text not null,
            depth integer not null default 0,  -- for position = 'at_depth'
            "order" integer not null default 100,
            enabled integer not null default 1,
            created_at text not null,
            updated_at text not null
        )
        """
    )
    db.execute("create index worldbook_scope on worldbook_entries (scope, project_root, conversation_id)")
