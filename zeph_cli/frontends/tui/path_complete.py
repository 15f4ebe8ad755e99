"""Completing a file path typed after `/attach`: the entries of the directory it names that start with it.

Invariant: reads one directory listing per call, never more, and offers at most
`LIMIT` entries (directories end in `/`, hidden ones only when a `.` is typed).
"""

from __future__ import annotations

import os
from pathlib import Path

from .slash import Completion

COMMAND = "/attach "
LIMIT = 50


def complete_path(text: str, cwd: Path) -> list[Completion]:
    """Completions for input `/attach PARTIAL` (none for any other input)."""
    stripped = text.lstrip()
    if not stripped.lower().startswith(COMMAND) or "\n" in stripped:
        return []
    typed = stripped[len(COMMAND):].lstrip()
    head, _, prefix = typed.rpartition("/")
    folder = Path(os.path.expanduser(head + "/")) if head or typed.startswith("/") else Path(".")
    if not folder.is_absolute():
        folder = cwd / folder
    try:
        with os.scandir(folder) as entries:
            names = sorted((entry.name + ("/" if entry.is_dir() else ""))
                           for entry in entries if entry.name.startswith(prefix)
                           and (prefix.startswith(".") or not entry.name.startswith(".")))
    except OSError:
        return []
    base = head + "/" if head or typed.startswith("/") else ""
    return [Completion(f"{COMMAND}{base}{name}", base + name, "", "directory" if name.endswith("/") else "file")
            for name in names[:LIMIT]]
