"""Opening the SQLite database: pragmas, migrations, friendly failures.

Invariant: a `Database` returned here has WAL journaling, a busy timeout,
foreign keys on and every migration applied; any failure is a `StoreError`
naming the file. A database a newer zeph wrote is refused before anything is
written to it.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path

from .sqlite import Database

from ..errors import StoreError
from .failures import open_failure
from .migrations import migrate, newer_schema

BUSY_TIMEOUT_MS = 5000


def open_database(path: Path) -> Database:
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise StoreError(f"cannot create the data directory {path.parent}: {exc.strerror or exc}") from None
    try:
        conn = sqlite3.connect(str(path), timeout=BUSY_TIMEOUT_MS / 1000)
        db = Database(conn)  # autocommit: no statement waits in an implicit transaction
        db.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")
        db.execute("PRAGMA foreign_keys = ON")
        db.execute("PRAGMA recursive_triggers = ON")  # a REPLACE fires the full-text index's delete trigger
        db.execute("PRAGMA journal_mode = WAL")
        db.execute("PRAGMA synchronous = NORMAL")
        newer = newer_schema(db)
        if newer is not None:
            conn.close()
            raise StoreError(
                f"the database {path} was written by a newer zeph ({newer}); upgrade zeph to use it "
                "(nothing was written to it)"
            )
        migrate(db)
    except sqlite3.DatabaseError as exc:
        raise StoreError(open_failure(path, exc)) from None
    return db
