"""Memory's tables: the vectors of indexed messages (`message_vectors`) and long-term memories (`memories`).

Invariant: registered with the shared runner (`store/migrations.py`) under their numbers, which never
change: an existing database records them by name.
"""

from __future__ import annotations

from ...store.migrations import migration
from ...store.sqlite import Database


@migration
def m009_message_vectors(db: Database) -> None:
    # Which agent-visible messages have a vector of which embedding model. The sqlite
    # backend keeps the vector itself here (float32 BLOB, L2-normalized); qdrant keeps it
    # in its collection and leaves `vector` null, so this table always says what is indexed.
    # Vectors of different models never mix: every read names its model.
    db.execute(
        """
        create table message_vectors (
            message_id integer not null references messages(id) on delete cascade,
            model text not null,
            conversation_id integer not null,
            dim integer not null,
            vector blob,
            created_at text not null,
            primary key (message_id, model)
        )
        """
    )
    db.execute("create index message_vectors_model on message_vectors (model, conversation_id)")
    db.execute(
        "create trigger messages_vectors_ad after delete on messages "
        "begin delete from message_vectors where message_id = old.id; end"
    )


@migration
def m010_long_term_memories(db: Database) -> None:
    # Long-term memory: facts saved by the user (`zeph memory add`), the model
    # (memory_save) or the chat app, injected as a <memory> block when relevant.
    db.execute(
        """
        create table memories (
            id integer primary key,
            content text not null,
            scope text not null check (scope in ('user', 'project', 'session')),
            project_root text,  -- the workspace root, for scope = 'project'
            conversation_id integer references conversations(id) on delete cascade,  -- scope = 'session'
            confidence real not null default 1.0 check (confidence >= 0 and confidence <= 1),
            source text not null,  -- tool | user | cli
            created_at text not null,
            updated_at text not null,
            archived integer not null default 0,
            embedding_model text,  -- the model `vector` was made with (null = not embedded yet)
            vector blob
        )
        """
    )
    db.execute("create index memories_scope on memories (archived, scope, project_root, conversation_id)")
