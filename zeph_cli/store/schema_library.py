"""sqlite-utils' `Database`, for schema changes, imported without numpy and pandas.

Invariant: importing sqlite-utils through `schema_database` never imports numpy or
pandas itself. sqlite-utils imports both at module level when they are installed, only
to map their scalar types to column types; zeph stores vectors as bytes and numbers as
Python ints and floats, so that mapping is never used, and the ~0.1–0.5 s those imports
cost would be paid by every migration. Only the importing thread is refused them, and
only while sqlite-utils loads: no global import lock is held and `sys.modules` is left
alone, so another thread (the embedder, the embedded model) imports numpy meanwhile as
usual. Nothing here runs until a schema change (or a test) asks for it: rows are read
and written with plain SQL (`store.sqlite`).
"""

from __future__ import annotations

import sqlite3
import sys
import threading
from importlib.abc import MetaPathFinder
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from sqlite_utils import Database

_NOT_NEEDED = frozenset({"numpy", "pandas"})


class _RefusedHere(MetaPathFinder):
    """Says numpy and pandas do not exist, to one thread."""

    def __init__(self) -> None:
        self.thread = threading.get_ident()

    def find_spec(self, name, path=None, target=None):
        if name in _NOT_NEEDED and threading.get_ident() == self.thread:
            raise ModuleNotFoundError(f"No module named {name!r}", name=name)
        return None


def import_without_numpy() -> None:
    if "sqlite_utils" in sys.modules:
        return
    refused = _RefusedHere()
    # new lists, never changed in place: an import running on another thread iterates the list it began with
    sys.meta_path = [refused, *sys.meta_path]
    try:
        import sqlite_utils  # noqa: F401
    finally:
        sys.meta_path = [finder for finder in sys.meta_path if finder is not refused]


def schema_database(conn: sqlite3.Connection) -> "Database":
    """sqlite-utils' view of this connection (no plugins run)."""
    import_without_numpy()
    from sqlite_utils import Database

    return Database(conn, execute_plugins=False)
