"""Recall's reads off the event loop: one thread with its own connection to the zeph database.

Invariant: every call `run` is given executes on the reader's one thread, in the order given, and only
that thread ever uses the reader's connection (opened there on its first call, by `open_database`: the
same file, WAL, a busy timeout). So a search never shares a connection with the event loop's store or
the indexer's thread — WAL lets it read while they write — and a search the caller stopped waiting for
(a source past its deadline) runs to its end without holding up the loop; the next call starts after it.
A database with no file (":memory:") cannot be opened twice: its calls run inline, on the caller's
connection, as before there was a reader.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import TYPE_CHECKING, TypeVar

if TYPE_CHECKING:
    from ...store.sqlite import Database

T = TypeVar("T")


class Reader:
    def __init__(self, db: "Database", path: Path | None) -> None:
        self.db = db  # the caller's connection: used inline when there is no file to open again
        self.path = path
        self._lock = threading.Lock()
        self._thread: ThreadPoolExecutor | None = None
        self._own: Database | None = None

    async def run(self, work: Callable[["Database"], T]) -> T:
        """`work(connection)` on the reader's thread, awaited without blocking the loop; cancelling the
        await leaves the work to end on its own."""
        if self.path is None:
            return work(self.db)
        with self._lock:
            if self._thread is None:
                self._thread = ThreadPoolExecutor(max_workers=1, thread_name_prefix="zeph-recall")
        return await asyncio.get_running_loop().run_in_executor(self._thread, self._on_thread, work)

    def _on_thread(self, work: Callable[["Database"], T]) -> T:
        if self._own is None:
            from ...store.database import open_database

            assert self.path is not None
            self._own = open_database(self.path)
        return work(self._own)
