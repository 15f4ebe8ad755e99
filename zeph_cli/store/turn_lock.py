"""One turn at a time on a session, across every zeph process that shares the database.

Invariant: while a `TurnLock` is held, no other holder of a lock for the same
database and session exists, in this process or another: the lock is an
exclusive `flock` on `session-locks/<id>.lock` beside the database, taken on
an open file of its own, so the kernel releases it when the holder ends,
however it ends (return, crash, kill -9), and two locks in one process exclude
each other too. A lock file is removed only by a holder (its session deleted),
and a lock taken on a file that is no longer the one at its path does not count,
so a removal never lets two holders in. Waiting polls without blocking, so it
can be cancelled at any moment. Where no lock file can be made (an in-memory database, a read-only or
full disk, a platform without `flock`), the lock is taken without one and the
writes that follow report the disk's own error.
"""

from __future__ import annotations

import asyncio
import errno
import logging
import os
import sys
import time
from pathlib import Path

try:
    import fcntl
except ImportError:  # pragma: no cover - not on POSIX: turns are not kept apart across processes
    fcntl = None  # type: ignore[assignment]

log = logging.getLogger("zeph.store")

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
            log.warning("turns on %s are not kept apart from other zeph processes: %s", self.path, exc)
            self._held = True  # flock itself failed (a file system without locks): go on unlocked
            return True
        if not self._still_named(fd):  # removed (its session deleted) while we waited: not the lock any more
            os.close(fd)
            return False
        self._fd, self._held = fd, True
        _write_holder(fd)
        return True

    def holder(self) -> str:
        """Who holds the lock, as its holder wrote it (`pid 1234, zeph ask, since 09:41:05`); "" if unknown."""
        if self.path is None:
            return ""
        try:
            with open(self.path, encoding="utf-8", errors="replace") as handle:
                return handle.read(200).strip()
        except OSError:
            return ""

    def _still_named(self, fd: int) -> bool:
        """Whether the locked file is still the one at `path` (a lock on an unlinked file excludes no one)."""
        assert self.path is not None
        try:
            named, held = os.stat(self.path), os.fstat(fd)
        except OSError:
            return False
        return (named.st_dev, named.st_ino) == (held.st_dev, held.st_ino)

    def remove(self) -> None:
        """Remove the lock file, while holding it (its session is gone); then release it."""
        if self._fd is not None and self.path is not None:
            self.path.unlink(missing_ok=True)
        self.release()

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
        except OSError as exc:
            log.warning("turns on %s are not kept apart from other zeph processes: %s", self.path, exc)
            return None


def _write_holder(fd: int) -> None:
    """Say in the lock file who holds it, for whoever waits (a full disk keeps it unsaid)."""
    command = " ".join(["zeph", *[arg for arg in sys.argv[1:2] if not arg.startswith("-")]])
    text = f"pid {os.getpid()}, {command}, since {time.strftime('%H:%M:%S')}"
    try:
        os.ftruncate(fd, 0)
        os.pwrite(fd, text.encode(), 0)
    except OSError:
        pass
