"""Write transactions that wait their turn.

Invariant: every write starts with `BEGIN IMMEDIATE`, taking the write lock
before reading, so SQLite's busy timeout applies (a deferred transaction that
reads first cannot be upgraded and fails at once with "database is locked").
A write the machine stops — a lock held past the timeout, a full disk, an I/O
error, a read-only file, whether at BEGIN, a statement or COMMIT — is rolled
back and becomes a `StoreError` naming the file and the cause
(`failures.write_failure`), never guessing who holds the lock.
"""

from __future__ import annotations

import contextlib
import secrets
import sqlite3
from collections.abc import Iterator

from .sqlite import Database

from ..errors import StoreError
from .failures import from_the_machine, write_failure


@contextlib.contextmanager
def write_transaction(db: Database) -> Iterator[Database]:
    if db.conn.in_transaction:  # nested: the outer transaction already holds the lock
        with _savepoint(db):
            yield db
        return
    try:
        db.conn.execute("BEGIN IMMEDIATE")
    except sqlite3.OperationalError as exc:
        raise StoreError(failure_message(db, exc)) from None
    try:
        yield db
        db.conn.execute("COMMIT")
    except sqlite3.Error as exc:
        _roll_back(db)
        if not from_the_machine(exc):
            raise
        raise StoreError(failure_message(db, exc)) from None
    except BaseException:
        _roll_back(db)
        raise


def _roll_back(db: Database) -> None:
    """Undo what the failed transaction wrote (a failure may have ended it already)."""
    if db.conn.in_transaction:
        try:
            db.conn.execute("ROLLBACK")
        except sqlite3.Error:  # a full disk can fail the rollback too: SQLite undoes it on the next open
            pass


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


def failure_message(db: Database, exc: sqlite3.Error) -> str:
    """One sentence for a write that failed: the file, the cause (a lock held past the busy timeout, a full
    disk, a read-only file), and what to do."""
    try:
        waited_ms = db.conn.execute("PRAGMA busy_timeout").fetchone()[0]
    except sqlite3.Error:
        waited_ms = 0
    return write_failure(db.path, exc, waited_ms)
