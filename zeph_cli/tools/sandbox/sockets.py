"""Unix sockets that servers outside the sandbox listen on, by path.

Invariant: `bound_socket_paths` returns the socket files that exist now among the bound paths in
the kernel's table of this network namespace's unix sockets (`/proc/net/unix`) and, found by
looking, in the run-time directories where services put theirs (/run, /var/run, $XDG_RUNTIME_DIR,
a few levels deep): the scan catches a server bound in another network namespace (a container's
docker.sock) or by a relative path, which the table lists under another name or not at all.
Abstract names (`@…`) are left out (a network namespace of its own, or Landlock's scope, keeps
those away), and so is a socket in a folder this user may not enter (another user's 0700 runtime
dir): a command in the sandbox, who has no more rights, cannot reach it, and the sandbox could not
cover it either (bubblewrap fails on the path). An unreadable table gives None: the caller reports
that covering is missing.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

__all__ = ["UNIX_TABLE", "bound_socket_paths"]

UNIX_TABLE = Path("/proc/net/unix")


def bound_socket_paths(table: Path = UNIX_TABLE) -> list[Path] | None:
    """The existing socket files servers are bound to, or None when the table cannot be read."""
    try:
        text = table.read_text(errors="replace")
    except OSError:
        return None
    paths: list[Path] = []
    seen: set[str] = set()
    for line in text.splitlines()[1:]:
        fields = line.split(None, 7)
        if len(fields) < 8 or not fields[7].startswith("/"):
            continue  # unbound, or an abstract name
        raw = fields[7]
        if raw in seen:
            continue
        seen.add(raw)
        try:
            if stat.S_ISSOCK(os.lstat(raw).st_mode):
                paths.append(Path(raw))
        except OSError:
            continue
    for found in _scan_run_dirs():
        if str(found) not in seen:
            seen.add(str(found))
            paths.append(found)
    known: dict[Path, bool] = {}  # sockets share their folders (/run/user/1000/…): each is looked at once
    return [path for path in paths if enterable(path.parent, known)]


def enterable(directory: Path, known: dict[Path, bool] | None = None) -> bool:
    """Whether this user may pass through every folder down to `directory` by its permission bits: as its
    owner, its group or anyone; root only where it owns the folder (in the sandbox's user namespace root
    keeps no power over other users' files). `known` keeps the answers for folders already looked at."""
    known = {} if known is None else known
    if directory not in known:
        parent_ok = directory.parent == directory or enterable(directory.parent, known)
        known[directory] = parent_ok and _passable(directory)
    return known[directory]


def _passable(folder: Path) -> bool:
    uid, groups = os.geteuid(), {os.getegid(), *os.getgroups()}
    try:
        info = os.stat(folder)
    except OSError:
        return False
    if info.st_uid == uid:
        return uid == 0 or bool(info.st_mode & stat.S_IXUSR)
    if info.st_gid in groups:
        return bool(info.st_mode & stat.S_IXGRP)
    return bool(info.st_mode & stat.S_IXOTH)


RUN_DIRS = ("/run", "/var/run")
SCAN_DEPTH = 4
SCAN_MAX_ENTRIES = 5000


def _scan_run_dirs() -> list[Path]:
    """Socket files under the run-time directories, at most `SCAN_DEPTH` levels and `SCAN_MAX_ENTRIES` entries."""
    roots = [*RUN_DIRS, *([os.environ["XDG_RUNTIME_DIR"]] if os.environ.get("XDG_RUNTIME_DIR") else [])]
    found: list[Path] = []
    budget = SCAN_MAX_ENTRIES
    seen_dirs: set[str] = set()
    pending = [(os.path.realpath(root), 0) for root in roots]
    while pending and budget > 0:
        directory, depth = pending.pop()
        if directory in seen_dirs:
            continue
        seen_dirs.add(directory)
        try:
            entries = os.scandir(directory)
        except OSError:
            continue
        with entries:
            for entry in entries:
                budget -= 1
                if budget <= 0:
                    break
                try:
                    mode = entry.stat(follow_symlinks=False).st_mode
                except OSError:
                    continue
                if stat.S_ISSOCK(mode):
                    found.append(Path(entry.path))
                elif stat.S_ISDIR(mode) and depth < SCAN_DEPTH:
                    pending.append((entry.path, depth + 1))
    return found
