"""One turn at a time on a session, across every zeph process that shares the database.

Invariant: while a `TurnLock` is held, no other holder of a lock for the same
database and session exists, in this process or another: the lock is an
exclusive `flock` on `session-locks/<id>.lock` beside the database, taken on
an open file of its own, so the kernel releases it when the holder ends,
however it ends (return, crash, kill -9), and two locks in one process exclude
each other too. Waiting polls without blocking, so it can be cancelled at any
moment. Where no lock file can be made (an in-memory database, a read-only or
full disk, a platform without `flock`), the lock is taken without one and the
writes that follow report the disk's own error.
"""

from __future__ import annotations

import asyncio
import errno
import os
from pathlib import Path

try:
    import fcntl
except ImportError:  # pragma: no cover - not on POSIX: turns are not kept apart across processes
    fcntl = None  # type: ignore[assignment]

LOCK_DIR_NAME = "session-locks"
POLL_FIRST_S, POLL_MAX_S = 0.01, 0.1  # a wait checks again soon, then every 0.1 s


def lock_path(database: Path, conversation_id: int) -> Path:
    """The lock file of session `conversation_id` in the database at `database`."""
    return database.parent / LOCK_DIR_NAME / f"{conversation_id}.lock"


class TurnLock:
    """The lock of one session's turns (see the module's invariant); not reentrant."""

    def __init__(self, path: Path | None) -> None:
        self.path = path
        self._fd: int | None = None
        self._held = False

    @property
    def held(self) -> bool:
        return self._held

    def try_acquire(self) -> bool:
        """Take the lock if no one holds it; False (and nothing held) if someone does."""
        if self._held:
            raise RuntimeError("this turn lock is already held")
        fd = self._open()
        if fd is None:  # no file to lock: nothing to wait for
            self._held = True
            return True
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError as exc:
            os.close(fd)
            if exc.errno in (errno.EAGAIN, errno.EACCES, errno.EWOULDBLOCK):
                return False
            self._held = True  # flock itself failed (a file system without locks): go on unlocked
            return True
        self._fd, self._held = fd, True
        return True

    async def acquire(self) -> None:
        """Wait until the lock is free and take it (cancellable; nothing is held if cancelled)."""
        pause = POLL_FIRST_S
        while not self.try_acquire():
            await asyncio.sleep(pause)
            pause = min(pause * 2, POLL_MAX_S)

    def release(self) -> None:
        """Let the next turn go (closing the file drops the lock); a lock not held is left alone."""
        fd, self._fd, self._held = self._fd, None, False
        if fd is not None:
            os.close(fd)

    def _open(self) -> int | None:
        if self.path is None or fcntl is None:
            return None
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            return os.open(self.path, os.O_RDWR | os.O_CREAT | getattr(os, "O_CLOEXEC", 0), 0o600)
        except OSError:
            return None
