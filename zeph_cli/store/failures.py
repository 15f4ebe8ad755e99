"""What the disk did to a read or write of the database, in one sentence.

Invariant: every SQLite failure that comes from outside zeph — a full disk, an
I/O error, a read-only file or file system, a lock held too long, a damaged
file — becomes one sentence naming the database's file and the cause, with
what to do next; failures that would be zeph's own bugs (a constraint, bad
SQL) are not described here and stay errors of their own kind.
"""

from __future__ import annotations

import os
import sqlite3
from pathlib import Path

# SQLite's primary result codes (https://sqlite.org/rescode.html) for failures that come from the machine.
SQLITE_BUSY, SQLITE_LOCKED, SQLITE_NOMEM, SQLITE_READONLY = 5, 6, 7, 8
SQLITE_IOERR, SQLITE_CORRUPT, SQLITE_FULL, SQLITE_CANTOPEN, SQLITE_NOTADB = 10, 11, 13, 14, 26
_FROM_THE_MACHINE = {
    SQLITE_BUSY, SQLITE_LOCKED, SQLITE_NOMEM, SQLITE_READONLY, SQLITE_IOERR, SQLITE_CORRUPT, SQLITE_FULL,
    SQLITE_CANTOPEN, SQLITE_NOTADB,
}
SQLITE_READONLY_DBMOVED = SQLITE_READONLY | (4 << 8)  # the file was renamed or deleted under the connection
NEARLY_FULL_BYTES = 1 << 20  # an I/O error with less than this free is taken for a full disk


def primary_code(exc: sqlite3.Error) -> int | None:
    code = getattr(exc, "sqlite_errorcode", None)
    return code & 0xFF if isinstance(code, int) else None


def from_the_machine(exc: sqlite3.Error) -> bool:
    """Whether `exc` is the disk's or another process's doing (else it is a bug of zeph's)."""
    code = primary_code(exc)
    if code is None:  # raised by Python's sqlite3 module itself: a closed connection, a bad parameter
        return False
    return code in _FROM_THE_MACHINE


def free_bytes(path: Path) -> int | None:
    """Bytes an unprivileged writer may still use on the file system holding `path` (None: unknown)."""
    for candidate in (path, *path.parents):
        try:
            info = os.statvfs(candidate)
        except (OSError, AttributeError):
            continue
        return info.f_bavail * info.f_frsize
    return None


def read_only_file_system(path: Path) -> bool:
    for candidate in (path, *path.parents):
        try:
            return bool(os.statvfs(candidate).f_flag & getattr(os, "ST_RDONLY", 1))
        except (OSError, AttributeError):
            continue
    return False


def size_text(size: int) -> str:
    if size < 1024:
        return f"{size} bytes"
    if size < 1024 * 1024:
        return f"{size // 1024} KB"
    return f"{size / (1024 * 1024):.1f} MB"


def disk_full(path: Path, free: int | None) -> str:
    room = f" ({size_text(free)} free)" if free is not None else ""
    return f"the disk holding {path} is full{room}"


def write_failure(path: str, exc: sqlite3.Error, waited_ms: int = 0) -> str:
    """One sentence for a write to the database at `path` that failed with `exc` (a failure from the machine)."""
    where = Path(path) if path else None
    name = f"the database {path}" if path else "the database"
    code = primary_code(exc)
    free = free_bytes(where) if where is not None else None
    if code in (SQLITE_BUSY, SQLITE_LOCKED):
        waited = f" for {waited_ms / 1000:g} s (the busy timeout)" if waited_ms else ""
        return f"{name} stayed locked{waited}, so nothing could be written ({exc}); try again"
    if where is not None and (code == SQLITE_FULL or (code == SQLITE_IOERR and free is not None
                                                      and free < NEARLY_FULL_BYTES)):
        return f"{disk_full(where, free)}, so nothing could be written to it; free some space and try again"
    if getattr(exc, "sqlite_errorcode", None) == SQLITE_READONLY_DBMOVED:
        return f"{name} was moved or deleted while zeph was using it, so nothing could be written to it"
    if code == SQLITE_READONLY:
        if where is not None and read_only_file_system(where):
            why = "its file system is mounted read-only"
        else:
            why = "the file or its folder cannot be written by this user"
        return f"{name} is read-only ({why}), so nothing could be written to it"
    if code in (SQLITE_CORRUPT, SQLITE_NOTADB):
        return f"{name} is damaged ({exc}); nothing was written to it"
    return f"{name} could not be written ({exc})"


def open_failure(path: Path, exc: sqlite3.Error) -> str:
    """One sentence for a database that could not be opened (set up, migrated) at `path`."""
    free = free_bytes(path)
    if primary_code(exc) in (SQLITE_FULL, SQLITE_IOERR) and free is not None and free < NEARLY_FULL_BYTES:
        return f"cannot open the database {path}: {disk_full(path, free)}; free some space and try again"
    if primary_code(exc) in (SQLITE_READONLY, SQLITE_CANTOPEN, SQLITE_IOERR):
        if read_only_file_system(path):
            return f"cannot open the database {path}: its file system is mounted read-only"
        if not os.access(path.parent, os.W_OK) or (path.exists() and not os.access(path, os.W_OK)):
            return (f"cannot open the database {path}: the file or its folder cannot be written by this user "
                    "(zeph writes each prompt before sending it)")
    return f"cannot open the database {path}: {exc}"
