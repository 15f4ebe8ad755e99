"""Numbered schema migrations, recorded in `_zeph_migrations` and applied on open.

Invariant: migrations only ever get appended; each runs once, in order, inside
its own transaction, and an old database opened by a newer zeph is brought up
to date without losing rows. A database a newer zeph wrote (see
`newer_schema`) is never migrated here.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from datetime import datetime, UTC

from .sqlite import Database

from .transactions import write_transaction

Migration = Callable[[Database], None]
MIGRATIONS: list[tuple[str, Migration]] = []
MIGRATIONS_TABLE = "_zeph_migrations"


def migration(fn: Migration) -> Migration:
    MIGRATIONS.append((fn.__name__, fn))
    return fn


@migration
def m001_conversations_and_messages(db: Database) -> None:
    db["conversations"].create(
        {
            "id": int,
            "title": str,
            "created_at": str,
            "updated_at": str,
            "provider": str,
            "model": str,
            "cwd": str,
        },
        pk="id",
    )
    db["messages"].create(
        {
            "id": int,
            "conversation_id": int,
            "role": str,
            "content": str,
            "created_at": str,
        },
        pk="id",
        foreign_keys=[("conversation_id", "conversations", "id")],
    )
    db["messages"].create_index(["conversation_id", "id"])


@migration
def m002_message_parts_and_visibility(db: Database) -> None:
    messages = db["messages"]
    messages.add_column("parts", str)  # JSON list of text / tool_call / tool_result parts
    messages.add_column("agent_visible", int, not_null_default=1)
    messages.add_column("user_visible", int, not_null_default=1)
    messages.add_column("compacted_at", str)
    messages.add_column("metadata", str, not_null_default="{}")
    messages.add_column("token_count", int)
    messages.add_column("token_counter", str)  # which tokenizer produced token_count
    messages.create_index(["conversation_id", "agent_visible", "id"])


@migration
def m003_message_search(db: Database) -> None:
    db["messages"].enable_fts(["content"], create_triggers=True)


@migration
def m004_conversation_settings_and_calibration(db: Database) -> None:
    db["conversations"].add_column("metadata", str, not_null_default="{}")
    db["token_calibration"].create(
        {"provider": str, "model": str, "factor": float, "samples": int, "updated_at": str},
        pk=("provider", "model"),
    )


@migration
def m005_tool_runs_and_outputs(db: Database) -> None:
    # The audit trail: one row per tool call the model made, whatever was decided.
    db["tool_runs"].create(
        {
            "id": int,
            "conversation_id": int,
            "tool_call_id": str,
            "tool": str,
            "arguments": str,  # JSON, secrets redacted
            "decision": str,  # auto | allowed | approved | denied | blocked | invalid
            "reason": str,
            "exit_code": int,
            "is_error": int,
            "duration_ms": int,
            "output_chars": int,
            "created_at": str,
        },
        pk="id",
        foreign_keys=[("conversation_id", "conversations", "id")],
    )
    db["tool_runs"].create_index(["conversation_id", "id"])
    # Full (redacted) text of outputs that were cut for the context, for read_overflow.
    db["tool_outputs"].create(
        {"id": str, "conversation_id": int, "tool_call_id": str, "content": str, "created_at": str},
        pk="id",
        foreign_keys=[("conversation_id", "conversations", "id")],
    )


@migration
def m006_message_positions_and_compaction_events(db: Database) -> None:
    # History order is (position, id): a compaction summary or a pruned copy takes the
    # position of the first message it stands in for; every other row keeps position = id.
    db.execute("alter table messages add column position REAL")
    # Re-index search only when content changes, not on every flag or position update
    # (the position trigger below updates rows before their search entry exists).
    db.execute("drop trigger if exists messages_au")
    db.execute(
        "create trigger messages_au after update of content on messages begin "
        "insert into messages_fts (messages_fts, rowid, content) values ('delete', old.rowid, old.content); "
        "insert into messages_fts (rowid, content) values (new.rowid, new.content); end"
    )
    db.execute("update messages set position = id")
    db.execute(
        "create trigger messages_position_default after insert on messages when new.position is null "
        "begin update messages set position = new.id where id = new.id; end"
    )
    db["messages"].create_index(["conversation_id", "agent_visible", "position"])
    db.execute(
        """
        create table compaction_events (
            id integer primary key,
            conversation_id integer not null references conversations(id) on delete cascade,
            kind text not null,  -- soft | hard | tool_pair | proactive | manual | reactive_retry
            tokens_before integer,
            tokens_after integer,
            messages_compacted integer not null default 0,
            outputs_pruned integer not null default 0,
            method text not null default '',  -- llm | chunked | single | metadata | prune-only | ...
            probe_verdict text,  -- pass | soft_fail | hard_fail | error; null when no probe ran
            probe_score real,
            created_at text not null
        )
        """
    )
    db["compaction_events"].create_index(["conversation_id", "id"])


@migration
def m007_compression_guidelines(db: Database) -> None:
    # Failure-driven compression guidelines (ACON): detected context losses, and the
    # numbered rule lists synthesized from them (one row per version, newest active).
    db.execute(
        """
        create table compression_failure_pairs (
            id integer primary key,
            conversation_id integer references conversations(id) on delete set null,
            snapshot text not null,  -- the compacted context the model had
            reason text not null,  -- what it failed to recall, as detected
            processed integer not null default 0,
            created_at text not null
        )
        """
    )
    db.execute("create index compression_failure_pairs_processed on compression_failure_pairs (processed, id)")
    db.execute(
        "create table compression_guidelines (version integer primary key, text text not null, created_at text not null)"
    )


@migration
def m008_learned_context_windows(db: Database) -> None:
    # The context window a provider's server stated (its context-length error, or its
    # own report), per provider entry, model and endpoint: later sessions budget for it
    # from their first request instead of paying one rejected request to learn it again.
    db.execute(
        """
        create table learned_windows (
            provider text not null,
            model text not null,
            base_url text not null,
            tokens integer not null check (tokens > 0),
            source text not null,  -- where it was learned, as shown by `zeph context`
            updated_at text not null,
            primary key (provider, model, base_url)
        )
        """
    )


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


@migration
def m015_imported_session_key(db: Database) -> None:
    # A session imported from another tool's history (`zeph sessions import`) is one conversation per
    # source and session key: a unique index says so and finds it. Two imports running at once could
    # store one twice before this; the later copies keep their messages and lose the key (kept under
    # `imported_again`), so the next import continues the first.
    rows = db.execute(
        "select id, metadata from conversations where json_extract(metadata, '$.imported.session') is not null "
        "order by id"
    ).fetchall()
    seen: set[tuple[str, str]] = set()
    for conversation_id, text in rows:
        metadata = json.loads(text)
        imported = metadata["imported"]
        key = (str(imported.get("from")), str(imported.get("session")))
        if key in seen:
            metadata["imported_again"] = metadata.pop("imported")
            db.execute("update conversations set metadata = ? where id = ?",
                       [json.dumps(metadata, ensure_ascii=False), conversation_id])
        seen.add(key)
    db.execute(
        "create unique index conversations_imported on conversations "
        "(json_extract(metadata, '$.imported.from'), json_extract(metadata, '$.imported.session')) "
        "where json_extract(metadata, '$.imported.session') is not null"
    )


def applied(db: Database) -> set[str]:
    if MIGRATIONS_TABLE not in db.table_names():
        return set()
    return {name for (name,) in db.execute(f"select name from {MIGRATIONS_TABLE}")}


def newer_schema(db: Database) -> str | None:
    """Why this database was written by a newer zeph (a migration or `user_version` this one does not
    know), or None when this zeph knows its whole schema."""
    unknown = sorted(applied(db) - {name for name, _ in MIGRATIONS})
    if unknown:
        return f"it has migration {unknown[0]!r}, which this zeph does not know"
    version = db.execute("PRAGMA user_version").fetchone()[0]
    if version > len(MIGRATIONS):
        return f"its schema version is {version}, this zeph knows up to {len(MIGRATIONS)}"
    return None


def migrate(db: Database, upto: str | None = None) -> list[str]:
    """Apply pending migrations (all, or up to and including `upto`); return their names.

    `user_version` records how many migrations are applied, so a newer schema is
    recognised even by a zeph that reads only that number.
    """
    if MIGRATIONS_TABLE not in db.table_names():
        with write_transaction(db):
            db[MIGRATIONS_TABLE].create({"name": str, "applied_at": str}, pk="name", if_not_exists=True)
    ran: list[str] = []
    done = applied(db)  # read once: an up-to-date database (every start) asks nothing more per migration
    for name, fn in MIGRATIONS:
        if name not in done:
            with write_transaction(db):
                # checked again under the write lock: another process may have just applied it
                if name not in applied(db):
                    fn(db)
                    db.insert(MIGRATIONS_TABLE, {"name": name, "applied_at": datetime.now(UTC).isoformat()})
                    ran.append(name)
            done.add(name)
        if name == upto:
            break
    count = len(applied(db))
    if upto is None and db.execute("PRAGMA user_version").fetchone()[0] != count:
        with write_transaction(db):
            db.execute(f"PRAGMA user_version = {count}")
    return ran
