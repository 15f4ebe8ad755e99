"""Explaining a refusal: the line added to a tool result when the sandbox stopped a write.

Invariant: a note is added only for a path named on a "Permission denied" /
"Read-only file system" line that lies outside the policy's writable paths and
that the user could write without the sandbox (`could_write`); it names the path
and the settings that allow it. Without the sandbox's part in it, nothing is added.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable
from pathlib import Path

from .policy import SandboxPolicy

__all__ = ["network_note", "refused_write_note", "writable_without_sandbox"]

_DENIED = re.compile(r"Permission denied|Read-only file system")
_QUOTED = re.compile(r"'([^'\n]+)'|‘([^’\n]+)’|\"([^\"\n]+)\"|`([^'`\n]+)'")
_BARE = re.compile(r"(?:^|\s)([^\s:'\"‘’`]+): (?:Permission denied|Read-only file system)")
_NO_NETWORK = re.compile(
    r"Could not resolve host|Temporary failure in name resolution|Network is unreachable|"
    r"Name or service not known|getaddrinfo failed|nodename nor servname"
)
MAX_PATHS_SHOWN = 4


def writable_without_sandbox(path: Path) -> bool:
    """Whether this process may write `path` (or create it, for a missing path)."""
    for candidate in (path, *path.parents):
        if candidate.exists():
            return os.access(candidate, os.W_OK)
    return False


def _denied_paths(output: str, cwd: Path) -> list[Path]:
    paths: list[Path] = []
    if not _DENIED.search(output):  # the common case, without splitting a long output into lines
        return paths
    for line in output.splitlines():
        if not _DENIED.search(line):
            continue
        named = [next(g for g in m.groups() if g) for m in _QUOTED.finditer(line)]
        named += [m.group(1) for m in _BARE.finditer(line)]
        for raw in named:
            path = Path(raw).expanduser()
            path = path if path.is_absolute() else cwd / path
            if path not in paths:
                paths.append(path)
    return paths


def refused_write_note(
    output: str,
    policy: SandboxPolicy,
    cwd: Path,
    could_write: Callable[[Path], bool] = writable_without_sandbox,
) -> str | None:
    """One line saying the sandbox refused writing a path outside `policy.writable`, and how to allow it."""
    refused = [p for p in _denied_paths(output, cwd) if not policy.allows_write(p) and could_write(p)]
    if not refused:
        return None
    shown = ", ".join(str(p) for p in refused[:2]) + (" …" if len(refused) > 2 else "")
    writable = ", ".join(str(p) for p in policy.writable[:MAX_PATHS_SHOWN])
    if len(policy.writable) > MAX_PATHS_SHOWN:
        writable += " …"
    how = (
        "add the directory to [tools.sandbox] allow_write or tools.allowed_paths"
        if policy.profile == "workspace"
        else 'set [tools.sandbox] profile = "workspace" and add the directory to allow_write'
    )
    return (
        f"[sandbox: writing {shown} was refused — sandboxed commands may write only in {writable} "
        f"(the first is a private temp dir, $TMPDIR; profile {policy.profile!r}). If the user wants this "
        f"command to write there, they can {how}, or turn the sandbox off with [tools.sandbox] enabled = false]"
    )


def network_note(output: str, policy: SandboxPolicy) -> str | None:
    """One line saying the network is blocked, when a command's failure looks like no network."""
    if policy.network or not _NO_NETWORK.search(output):
        return None
    return "[sandbox: network access is blocked for commands ([tools.sandbox] allow_network = false)]"
