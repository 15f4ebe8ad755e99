"""Recall's reads off the event loop: one thread with its own connection to the zeph database.

Invariant: every call `run` is given executes on the reader's one thread, in the order given, and only
that thread ever uses the reader's connection (opened there on its first call, by `open_database`: the
same file, WAL, a busy timeout). So a search never shares a connection with the event loop's store or
the indexer's thread — WAL lets it read while they write — and a search the caller stopped waiting for
(a source past its deadline) runs to its end without holding up the loop; the next call starts after it.
The thread is a daemon, so an idle reader never keeps the process from its quick exit
(`process_exit.leave`); `close` waits for a busy one (the memory service's exit hook), then closes the
connection on its thread, so the last connection to close leaves no write-ahead log behind. A database with no
file (":memory:") cannot be opened twice: its calls run inline, on the caller's connection, as before
there was a reader.
"""

from __future__ import annotations

import asyncio
import queue
import threading
from collections.abc import Callable
from concurrent.futures import Future
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

if TYPE_CHECKING:
    from ...store.sqlite import Database

T = TypeVar("T")


def _CLOSE(db: "Database") -> None:  # a marker job: the reader closes its connection and ends
    raise AssertionError("never run")


class Reader:
    def __init__(self, db: "Database", path: Path | None) -> None:
        self.db = db  # the caller's connection: used inline when there is no file to open again
        self.path = path
        self._lock = threading.Lock()
        self._jobs: queue.SimpleQueue[tuple[Callable[[Database], Any], Future[Any]]] = queue.SimpleQueue()
        self._thread: threading.Thread | None = None
        self._queued = 0  # calls given and not ended
        self._idle = threading.Event()
        self._idle.set()
        self._own: Database | None = None

    async def run(self, work: Callable[["Database"], T]) -> T:
        """`work(connection)` on the reader's thread, awaited without blocking the loop; cancelling the
        await leaves work already started to end on its own (work not started yet is dropped)."""
        if self.path is None:
            return work(self.db)
        done: Future[T] = Future()
        with self._lock:
            if self._thread is None:
                self._thread = threading.Thread(target=self._serve, name="zeph-recall", daemon=True)
                self._thread.start()
            self._queued += 1
            self._idle.clear()
            self._jobs.put((work, done))
        return await asyncio.wrap_future(done)

    def close(self, timeout: float) -> None:
        """Wait up to `timeout` seconds for the calls given to end; then, when they have, close the reader's
        connection on its thread and let the thread end (a later call starts another)."""
        if not self._idle.wait(timeout):
            return
        with self._lock:
            thread, self._thread = self._thread, None
            if thread is None:
                return
            closed: Future[Any] = Future()
            self._jobs.put((_CLOSE, closed))
        closed.exception(timeout=1.0)

    def _serve(self) -> None:
        while True:
            work, done = self._jobs.get()
            if work is _CLOSE:
                if self._own is not None:
                    self._own.close()
                    self._own = None
                done.set_result(None)
                return
            try:
                if done.set_running_or_notify_cancel():
                    try:
                        done.set_result(work(self._connection()))
                    except BaseException as exc:  # noqa: BLE001 — the caller's to raise
                        done.set_exception(exc)
            finally:
                with self._lock:
                    self._queued -= 1
                    if not self._queued:
                        self._idle.set()

    def _connection(self) -> "Database":
        if self._own is None:
            from ...store.database import open_database

            assert self.path is not None
            self._own = open_database(self.path)
        return self._own
