"""Numbered schema migrations, recorded in `_zeph_migrations` and applied on open: the runner, and the
migrations of the shared tables (conversations, messages, tool runs, compaction, guidelines, windows,
imports).

Invariant: migrations only ever get appended; each runs once, in the order of its number — unique across
this module and every feature's `features/<feature>/migrations.py`, which registers its own tables'
migrations with `@migration` — inside its own transaction, and an old database opened by a newer zeph is
brought up to date without losing rows. `MIGRATIONS` is whole once this module is imported (the features'
modules are found by file, so the runner names no feature). A database a newer zeph wrote (see
`newer_schema`) is never migrated here.
"""

from __future__ import annotations

import bisect
import importlib
import json
import os
from collections.abc import Callable
from datetime import datetime, UTC

from .sqlite import Database

from .transactions import write_transaction

Migration = Callable[[Database], None]
MIGRATIONS: list[tuple[str, Migration]] = []
MIGRATIONS_TABLE = "_zeph_migrations"
FEATURES = __name__.rpartition(".")[0].rpartition(".")[0] + ".features"


def migration(fn: Migration) -> Migration:
    """Register `fn` (named `mNNN_what`) at its number's place, whatever order the modules are imported in;
    a number already taken is a RuntimeError naming both migrations."""
    name = fn.__name__
    number = migration_number(name)
    taken = next((other for other, _ in MIGRATIONS if migration_number(other) == number), None)
    if taken is not None:
        raise RuntimeError(f"migrations {taken} and {name} share the number {number}")
    bisect.insort(MIGRATIONS, (name, fn), key=lambda item: migration_number(item[0]))
    return fn


def migration_number(name: str) -> int:
    number, underscore, _ = name[1:].partition("_")
    if not (name.startswith("m") and underscore and number.isdigit()):
        raise RuntimeError(f"migration {name} is not named mNNN_what")
    return int(number)


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



def _register_feature_migrations() -> None:
    """Import each feature's `migrations` module: its `@migration` functions register themselves."""
    for folder in importlib.import_module(FEATURES).__path__:
        for entry in sorted(os.scandir(folder), key=lambda entry: entry.name):
            if entry.is_dir() and os.path.isfile(os.path.join(entry.path, "migrations.py")):
                importlib.import_module(f"{FEATURES}.{entry.name}.migrations")


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


_register_feature_migrations()
