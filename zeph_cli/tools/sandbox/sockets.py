"""Unix sockets that servers outside the sandbox listen on, by path.

Invariant: `bound_socket_paths` reads the kernel's table of this network namespace's unix
sockets (`/proc/net/unix`) and returns the bound filesystem paths that exist now as sockets;
abstract names (`@…`) are left out (a network namespace of its own, or Landlock's scope, keeps
those away). An unreadable table gives no paths: the caller reports that masking is missing.
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
    return paths
