"""The `message_vectors` table: which messages are indexed for which embedding model.

Invariant: every read and write names its model, so vectors of different models
never mix. Rows are only appended or deleted (a replaced vector is a delete and
an append), and the rowids this module hands out are never below a rowid used
before — `max(rowid) + 1` at the least, the wall clock in nanoseconds when that
is larger — so a reader that has seen every row up to rowid R knows that any
row it has not seen has a rowid above R, even after the newest rows were
deleted. A row with a vector belongs to the embedded (sqlite) backend; a row
whose vector is NULL records a message indexed in an external backend (qdrant).
This module deals in bytes; numpy stays out of the store.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass

from ...store.sqlite import Database

from ...store.conversations import now_iso
from ...store.transactions import write_transaction
from ..worldbook.store import ISOLATED_KEY

MESSAGE_VECTORS = "message_vectors"


@dataclass(frozen=True)
class PendingMessage:
    """An agent-visible message with text that has no vector yet for some model."""

    message_id: int
    conversation_id: int
    role: str
    content: str


@dataclass(frozen=True)
class StoredVector:
    """A `message_vectors` row as written: `vector` is raw float32 bytes, or None for an external backend."""

    message_id: int
    conversation_id: int
    dim: int
    vector: bytes | None


@dataclass(frozen=True)
class VectorTableState:
    """What a reader compares its cache against: rows of one model, the newest rowid, and which database."""

    rows: int
    max_rowid: int
    database_id: str


def database_id(db: Database) -> str:
    """A stamp that tells this database apart from one recreated at the same path (when it was created)."""
    row = db.execute("select min(applied_at) from _zeph_migrations").fetchone()
    return str(row[0] or "")


def newest_rowid(db: Database, model: str) -> int:
    """The largest rowid among `model`'s rows (0 when none), read backwards from the table's newest row.

    Every search asks this. The (model, conversation_id) index orders a model's entries by
    conversation first, so `max(rowid)` through it walks all of them (~11 ms per 100k rows);
    the table in rowid order answers at its first row of `model` — at once for the model being
    indexed, whose rows are the newest (`+model` keeps the planner off that index). A model
    without rows is answered by the index, without walking the table.
    """
    row = db.execute(
        f"select case when exists (select 1 from {MESSAGE_VECTORS} where model = ?) then "
        f"(select rowid from {MESSAGE_VECTORS} where +model = ? order by rowid desc limit 1) end",
        [model, model],
    ).fetchone()
    return int(row[0] or 0)


def table_state(db: Database, model: str) -> VectorTableState:
    """Row count and newest rowid of `model` (the count walks the model's index entries: ~15 ms per 100k)."""
    count, newest = db.execute(
        f"select count(*), max(rowid) from {MESSAGE_VECTORS} where model = ?", [model]
    ).fetchone()
    return VectorTableState(int(count), int(newest or 0), database_id(db))


def rows_after(db: Database, model: str, after_rowid: int) -> Iterator[tuple[int, int, int, bytes | None]]:
    """(rowid, message_id, dim, vector bytes or None) of `model`'s rows above `after_rowid`, in rowid order."""
    yield from db.execute(
        f"select rowid, message_id, dim, vector from {MESSAGE_VECTORS} "
        "where model = ? and rowid > ? order by rowid",
        [model, after_rowid],
    )


def model_dim(db: Database, model: str) -> int | None:
    """The dimension `model`'s stored rows have, or None when it has none."""
    row = db.execute(f"select dim from {MESSAGE_VECTORS} where model = ? limit 1", [model]).fetchone()
    return None if row is None else int(row[0])


def write_vectors(db: Database, model: str, rows: Sequence[StoredVector]) -> None:
    """Store `rows` for `model` in one transaction, replacing any row of the same message and model.

    Messages deleted meanwhile are skipped (their row would dangle). Raises ValueError when
    the rows' dimension differs from what `model` already has stored (a changed model needs a reindex).
    """
    if not rows:
        return
    dims = {row.dim for row in rows}
    stamp = now_iso()
    with write_transaction(db):
        stored_dim = model_dim(db, model)
        if len(dims) > 1 or (stored_dim is not None and dims != {stored_dim}):
            have = f"{stored_dim}-dimensional vectors" if stored_dim is not None else "no vectors"
            raise ValueError(
                f"embedding model {model!r} has {have} stored; got {sorted(dims)} dimensions — "
                "run `zeph memory reindex --all` after changing the model"
            )
        existing: set[int] = set()
        for ids in _chunks([row.message_id for row in rows]):
            placeholders = ",".join("?" * len(ids))
            existing.update(r[0] for r in db.execute(f"select id from messages where id in ({placeholders})", ids))
            db.execute(
                f"delete from {MESSAGE_VECTORS} where model = ? and message_id in ({placeholders})", [model, *ids]
            )
        kept = [row for row in rows if row.message_id in existing]
        if not kept:
            return
        table_max = db.execute(f"select max(rowid) from {MESSAGE_VECTORS}").fetchone()[0] or 0
        first = max(int(table_max) + 1, time.time_ns())
        db.conn.executemany(
            f"insert into {MESSAGE_VECTORS} (rowid, message_id, model, conversation_id, dim, vector, created_at) "
            "values (?, ?, ?, ?, ?, ?, ?)",
            [
                (first + i, row.message_id, model, row.conversation_id, row.dim, row.vector, stamp)
                for i, row in enumerate(kept)
            ],
        )


def missing_messages(
    db: Database, model: str, *, with_vector: bool, limit: int, roles: Sequence[str] | None = None, since_id: int = 0
) -> list[PendingMessage]:
    """Agent-visible messages with non-blank text that have no row of `model` of the backend's kind.

    `with_vector` True (the sqlite backend) counts only rows holding a vector as indexed;
    False (qdrant) only rows without one — so switching backends re-indexes. Oldest first.
    """
    where, args = _missing_where(model, with_vector, roles, since_id)
    rows = db.execute(
        f"select m.id, m.conversation_id, m.role, m.content from messages m where {where} order by m.id limit ?",
        [*args, limit],
    )
    return [PendingMessage(r[0], r[1], r[2], r[3]) for r in rows]


def missing_count(
    db: Database, model: str, *, with_vector: bool, roles: Sequence[str] | None = None, since_id: int = 0
) -> int:
    """How many messages `missing_messages` would return without a limit (for a progress bar)."""
    where, args = _missing_where(model, with_vector, roles, since_id)
    return int(db.execute(f"select count(*) from messages m where {where}", args).fetchone()[0])


def _missing_where(
    model: str, with_vector: bool, roles: Sequence[str] | None, since_id: int = 0
) -> tuple[str, list[object]]:
    kind = "v.vector is not null" if with_vector else "v.vector is null"
    where = (
        f"m.id >= {int(since_id)} and m.agent_visible = 1 and trim(coalesce(m.content, '')) != '' and not exists ("
        f"select 1 from {MESSAGE_VECTORS} v where v.message_id = m.id and v.model = ? and {kind})"
    )
    # A session in worldbook isolation stays out of recall: its messages are not embedded.
    where += (
        " and not exists (select 1 from conversations c where c.id = m.conversation_id"
        f" and json_extract(c.metadata, '$.{ISOLATED_KEY}'))"
    )
    args: list[object] = [model]
    if roles is not None:
        where += f" and m.role in ({','.join('?' * len(roles))})"
        args.extend(roles)
    return where, args


def indexed_ids(db: Database, model: str, message_ids: Sequence[int]) -> set[int]:
    """Which of `message_ids` have a row of `model` (any kind)."""
    found: set[int] = set()
    for ids in _chunks(list(message_ids)):
        placeholders = ",".join("?" * len(ids))
        rows = db.execute(
            f"select message_id from {MESSAGE_VECTORS} where model = ? and message_id in ({placeholders})",
            [model, *ids],
        )
        found.update(r[0] for r in rows)
    return found


def _chunks(ids: list[int], size: int = 500) -> Iterator[list[int]]:
    for start in range(0, len(ids), size):
        yield ids[start : start + size]


@contextlib.contextmanager
def read_snapshot(db: Database) -> Iterator[Database]:
    """Reads inside see one consistent state of the database (a read transaction), unless the caller's
    transaction is already open."""
    if db.conn.in_transaction:
        yield db
        return
    db.conn.execute("BEGIN")
    try:
        yield db
    finally:
        if db.conn.in_transaction:
            db.conn.execute("COMMIT")


def count_rows(db: Database, model: str) -> int:
    return int(db.execute(f"select count(*) from {MESSAGE_VECTORS} where model = ?", [model]).fetchone()[0])


def delete_model(db: Database, model: str) -> int:
    """Delete every row of `model`; return how many went."""
    with write_transaction(db):
        return db.execute(f"delete from {MESSAGE_VECTORS} where model = ?", [model]).rowcount


def stored_models(db: Database) -> list[str]:
    return [r[0] for r in db.execute(f"select distinct model from {MESSAGE_VECTORS} order by model")]
