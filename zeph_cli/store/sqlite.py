"""The store's SQLite connection: rows read and written with plain SQL.

Invariant: the connection is in autocommit mode (`isolation_level = None`): a statement
outside an explicit transaction commits on its own, and every multi-statement write is
an explicit `BEGIN IMMEDIATE` … `COMMIT` (`transactions.write_transaction`), so no
implicit transaction ever holds the write lock. Values are bound as parameters, never
spliced into SQL; table and column names come from zeph's own code only. sqlite-utils
(for creating and changing tables, and for tests and benchmarks that fill them) is
loaded only when `schema` or `db[table]` is first used, so reading and writing rows,
which is all a turn does, never imports it.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator, Mapping, Sequence
from functools import cached_property
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import sqlite_utils
    import sqlite_utils.db

Params = Sequence[Any] | Mapping[str, Any]
_READING = frozenset({"select", "with", "pragma", "values"})


def _name(identifier: str) -> str:
    return '"' + identifier.replace('"', '""') + '"'


class Database:
    """One SQLite connection and the few row operations the store needs."""

    def __init__(self, conn: sqlite3.Connection) -> None:
        conn.isolation_level = None
        self.conn = conn

    def execute(self, sql: str, params: Params | None = None) -> sqlite3.Cursor:
        return self.conn.execute(sql, params or ())

    def query(self, sql: str, params: Params | None = None) -> Iterator[dict[str, Any]]:
        """The rows of `sql` (a statement that reads: select, with, pragma, values) as dicts; the statement
        runs now, the rows are fetched as they are read. Raises ValueError, running nothing, for any other
        statement, and for results whose column names repeat (a dict would keep only one of them)."""
        words = sql.split(None, 1)
        if not words or words[0].lower() not in _READING:
            raise ValueError(f"query() only reads; use execute() for: {sql.strip()[:60]!r}")
        cursor = self.conn.execute(sql, params or ())
        keys = [column[0] for column in cursor.description or ()]
        if len(set(keys)) != len(keys):
            cursor.close()
            repeated = sorted({key for key in keys if keys.count(key) > 1})
            raise ValueError(f"query() result repeats the column names {repeated}: give them aliases")
        return (dict(zip(keys, row)) for row in cursor)

    def insert(self, table: str, record: Mapping[str, Any]) -> int:
        """Insert one row; its rowid (the `id` of zeph's tables)."""
        columns = ", ".join(_name(column) for column in record)
        marks = ", ".join("?" for _ in record)
        cursor = self.conn.execute(f"insert into {_name(table)} ({columns}) values ({marks})", list(record.values()))
        assert cursor.lastrowid is not None
        return cursor.lastrowid

    def update(self, table: str, row_id: int, fields: Mapping[str, Any]) -> int:
        """Set `fields` on the row whose `id` is `row_id`; how many rows changed (0 or 1)."""
        assignments = ", ".join(f"{_name(column)} = ?" for column in fields)
        cursor = self.conn.execute(f"update {_name(table)} set {assignments} where id = ?", [*fields.values(), row_id])
        return cursor.rowcount

    def upsert(self, table: str, record: Mapping[str, Any], key: Sequence[str]) -> None:
        """Insert `record`, or update the row with the same `key` columns (a unique key of the table)."""
        columns = ", ".join(_name(column) for column in record)
        marks = ", ".join("?" for _ in record)
        conflict = ", ".join(_name(column) for column in key)
        updates = ", ".join(f"{_name(c)} = excluded.{_name(c)}" for c in record if c not in key)
        action = f"do update set {updates}" if updates else "do nothing"
        self.conn.execute(
            f"insert into {_name(table)} ({columns}) values ({marks}) on conflict ({conflict}) {action}",
            list(record.values()),
        )

    @cached_property
    def path(self) -> str:
        """The main database's file ("" for an in-memory or temporary database)."""
        for _seq, name, file in self.conn.execute("PRAGMA database_list"):
            if name == "main":
                return file or ""
        return ""

    def table_names(self) -> list[str]:
        return [row[0] for row in self.conn.execute("select name from sqlite_master where type = 'table'")]

    def close(self) -> None:
        self.conn.close()

    @cached_property
    def schema(self) -> "sqlite_utils.Database":
        """sqlite-utils on this connection, for creating and changing tables (imported on first use)."""
        from .schema_library import schema_database

        return schema_database(self.conn)

    def __getitem__(self, table: str) -> "sqlite_utils.db.Table":
        return self.schema.table(table)  # a view's name raises instead of giving a View
