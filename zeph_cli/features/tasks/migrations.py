"""The task list's tables (`task_items`, `task_spans`).

Invariant: registered with the shared runner (`store/migrations.py`) under its number, which never
changes: an existing database records it by name.
"""

from __future__ import annotations

from ...store.migrations import migration
from ...store.sqlite import Database


@migration
def m018_task_list(db: Database) -> None:
    # A session's task list (todo_write replaces it whole): its items in order, and the spans of stored
    # messages written while an item was in progress (what compaction reads as subgoals).
    db.execute(
        """
        create table task_items (
            conversation_id integer not null references conversations(id) on delete cascade,
            id text not null,  -- the model's own id for the item
            text text not null,
            status text not null check (status in ('pending', 'in_progress', 'completed', 'abandoned')),
            position integer not null,  -- its place in the list, from 0
            primary key (conversation_id, id)
        )
        """
    )
    db.execute(
        """
        create table task_spans (
            id integer primary key,
            conversation_id integer not null references conversations(id) on delete cascade,
            item_id text not null,
            text text not null,  -- the item's text while the span was open (as it read when the span closed)
            first_message_id integer not null,  -- the assistant message that put the item in progress
            last_message_id integer,  -- the newest message when it left progress; null = still in progress
            -- what the item became when the span closed ('abandoned' also when it left the list while in
            -- progress); null while open
            closed_status text check (closed_status in ('pending', 'completed', 'abandoned')),
            check ((last_message_id is null) = (closed_status is null))
        )
        """
    )
    db.execute("create index task_spans_conversation on task_spans (conversation_id, first_message_id)")
