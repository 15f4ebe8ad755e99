"""Write transactions that wait their turn.

Invariant: every write starts with `BEGIN IMMEDIATE`, taking the write lock
before reading, so SQLite's busy timeout applies (a deferred transaction that
reads first cannot be upgraded and fails at once with "database is locked").
A lock held past the timeout becomes a `StoreError` naming the file and the
wait, never guessing who holds the lock.
"""

from __future__ import annotations

import contextlib
import secrets
import sqlite3
from collections.abc import Iterator

from .sqlite import Database

from ..errors import StoreError


@contextlib.contextmanager
def write_transaction(db: Database) -> Iterator[Database]:
    if db.conn.in_transaction:  # nested: the outer transaction already holds the lock
        with _savepoint(db):
            yield db
        return
    try:
        db.conn.execute("BEGIN IMMEDIATE")
    except sqlite3.OperationalError as exc:
        raise StoreError(lock_message(db, exc)) from None
    try:
        yield db
    except BaseException:
        if db.conn.in_transaction:
            db.conn.execute("ROLLBACK")
        raise
    else:
        db.conn.execute("COMMIT")


@contextlib.contextmanager
def _savepoint(db: Database) -> Iterator[None]:
    """A nested write: undone alone if it fails, kept with the outer transaction if it does not."""
    name = f"zeph_{secrets.token_hex(8)}"
    db.conn.execute(f"SAVEPOINT {name}")
    try:
        yield
    except BaseException:
        if db.conn.in_transaction:  # a failure may have ended the whole transaction already
            db.conn.execute(f"ROLLBACK TO SAVEPOINT {name}")
            db.conn.execute(f"RELEASE SAVEPOINT {name}")
        raise
    else:
        db.conn.execute(f"RELEASE SAVEPOINT {name}")


def lock_message(db: Database, exc: sqlite3.OperationalError) -> str:
    """One sentence for a write that could not take the lock: the file, how long it waited, SQLite's words."""
    try:
        path = db.conn.execute("PRAGMA database_list").fetchone()[2]
        waited_ms = db.conn.execute("PRAGMA busy_timeout").fetchone()[0]
    except sqlite3.Error:
        path, waited_ms = "", 0
    name = f"the database {path}" if path else "the database"
    waited = f" for {waited_ms / 1000:g} s (the busy timeout)" if waited_ms else ""
    return f"{name} stayed locked{waited}, so nothing could be written ({exc}); try again"
