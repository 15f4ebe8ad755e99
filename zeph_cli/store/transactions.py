"""Write transactions that wait their turn.

Invariant: every write starts with `BEGIN IMMEDIATE`, taking the write lock
before reading, so SQLite's busy timeout applies (a deferred transaction that
reads first cannot be upgraded and fails at once with "database is locked").
A lock held past the timeout becomes a `StoreError`.
"""

from __future__ import annotations

import contextlib
import sqlite3
from collections.abc import Iterator

from sqlite_utils import Database

from ..errors import StoreError


@contextlib.contextmanager
def write_transaction(db: Database) -> Iterator[Database]:
    if db.conn.in_transaction:  # nested: the outer transaction already holds the lock
        with db.atomic():
            yield db
        return
    try:
        db.conn.execute("BEGIN IMMEDIATE")
    except sqlite3.OperationalError as exc:
        raise StoreError(f"the database is busy ({exc}): another zeph process is writing to it; try again") from None
    try:
        yield db
    except BaseException:
        if db.conn.in_transaction:
            db.conn.execute("ROLLBACK")
        raise
    else:
        db.conn.execute("COMMIT")
