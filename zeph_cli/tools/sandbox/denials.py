"""Explaining a refusal: the line added to a tool result when the sandbox stopped something.

Invariant: a write note is added only for a path named on a "Permission denied" /
"Read-only file system" line that lies outside the policy's writable paths and
that the user could write without the sandbox (`could_write`), or that the sandbox
keeps read-only inside them (`Protection`); a hidden-path note only when the command
names a hidden secret store or a path under /tmp that exists outside the private
/tmp; a network note only when the failure looks like no network. Each names what
was refused and the setting that allows it. Without the sandbox's part in it,
nothing is added.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Sequence
from pathlib import Path

from .policy import SandboxPolicy
from .protected import Protection

__all__ = ["hidden_note", "network_note", "process_note", "protected_note", "refused_write_note",
           "writable_without_sandbox"]

_DENIED = re.compile(r"Permission denied|Read-only file system|Device or resource busy")
_QUOTED = re.compile(r"'([^'\n]+)'|‘([^’\n]+)’|\"([^\"\n]+)\"|`([^'`\n]+)'")
_BARE = re.compile(r"(?:^|\s)([^\s:'\"‘’`]+): (?:Permission denied|Read-only file system|Device or resource busy)")
_NO_NETWORK = re.compile(
    r"Could not resolve host|Temporary failure in name resolution|Network is unreachable|"
    r"Name or service not known|getaddrinfo failed|nodename nor servname|Failed to establish a new connection|"
    r"Failed to connect to|Connection refused|Could not resolve hostname|unable to access '(?:https?|git|ssh)://"
)
_TMP_PATH = re.compile(r"(?<![\w./~-])(/tmp/[^\s'\"`;|&<>()$]+)")
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
    protected: Protection = Protection(),
    temp_shown: str | None = None,
) -> str | None:
    """One line saying the sandbox refused writing a path outside `policy.writable`, and how to allow it."""
    refused = [p for p in _denied_paths(output, cwd) if not policy.allows_write(p) and could_write(p)
               and _protected_by(p, protected) is None and not protected.is_hidden(p) and not _kernel_file(p)]
    if not refused:
        return None
    shown = ", ".join(str(p) for p in refused[:2]) + (" …" if len(refused) > 2 else "")
    writable = ", ".join(temp_shown if temp_shown and p == policy.temp_dir else str(p) for p in policy.writable[:MAX_PATHS_SHOWN])
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


def _kernel_file(path: Path) -> bool:
    """/proc and /sys: never the user's to allow (allow_write there would hand out the kernel's settings)."""
    return any(path == base or path.is_relative_to(base) for base in (Path("/proc"), Path("/sys")))


def _protected_by(path: Path, protected: Protection) -> Path | None:
    resolved = Path(os.path.realpath(path))
    for base in (*protected.read_only, *protected.held_empty):
        if resolved == base or resolved.is_relative_to(base):
            return base
    return None


def protected_note(output: str, protected: Protection, cwd: Path) -> str | None:
    """One line saying a path the sandbox keeps read-only inside the workspace was refused, and why."""
    bases: list[Path] = []
    for path in _denied_paths(output, cwd):
        base = _protected_by(path, protected)
        if base is not None and base not in bases:
            bases.append(base)
    if not bases:
        return None
    shown = ", ".join(str(b) for b in bases[:3])
    return (
        f"[sandbox: {shown} is read-only for commands — git runs hooks and obeys its config later, outside the "
        "sandbox, and zeph reads .zeph/ and its own files at the next start. If the user wants it changed, they can "
        "do it themselves, or turn the sandbox off with [tools.sandbox] enabled = false]"
    )


def hidden_note(
    command: str, protected: Protection, home: Path, *, private_tmp: bool, seen: Sequence[Path] = ()
) -> str | None:
    """One line when the command names a hidden secret store, or a /tmp path that commands cannot see."""
    named = [p for p in protected.hidden if any(form in command for form in _spellings(p, home))]
    if named:
        shown = ", ".join(_home_relative(p, home) for p in named[:3])
        return (
            f"[sandbox: {shown} is hidden from commands (secret stores and zeph's own files show as empty or "
            "missing). If the user wants commands to read it, they can add it to [tools.sandbox] allow_read]"
        )
    if private_tmp:
        outside = [m for m in _TMP_PATH.findall(command) if os.path.exists(m)
                   and not any(Path(m) == base or Path(m).is_relative_to(base) for base in seen)]
        if outside:
            return (
                f"[sandbox: commands have a private /tmp, so {outside[0]} (which exists outside) is not visible to "
                "them; files for later commands go in /tmp or $TMPDIR. If the user wants commands to read it, they can "
                "add it to [tools.sandbox] allow_read]"
            )
    return None


def _spellings(path: Path, home: Path) -> list[str]:
    forms = [str(path)]
    if path.is_relative_to(home) and path != home:
        relative = str(path.relative_to(home))
        forms += [f"~/{relative}", f"$HOME/{relative}", f"${{HOME}}/{relative}"]
    return forms


def _home_relative(path: Path, home: Path) -> str:
    return f"~/{path.relative_to(home)}" if path.is_relative_to(home) and path != home else str(path)


def network_note(output: str, policy: SandboxPolicy) -> str | None:
    """One line saying the network is blocked, when a command's failure looks like no network."""
    if policy.network or not _NO_NETWORK.search(output):
        return None
    return (
        "[sandbox: commands have no network (only their own loopback). If the user wants this command to reach the "
        "network, they can set [tools.sandbox] allow_network = true, or list the hosts it needs in allowed_hosts]"
    )


_SIGSYS = 31
_MKNOD = re.compile(r"(?<![\w-])mknod\b")
_KILL = re.compile(r"(?<![\w-])(?:kill|pkill|killall|kill -\d+)\b")


def process_note(command: str, output: str, exit_code: int | None) -> str | None:
    """One line when the failure comes from what the sandbox refuses beyond files: device nodes, signals to
    processes outside, and the system calls its filter ends a command for."""
    if exit_code in (-_SIGSYS, 128 + _SIGSYS):  # killed, or as bwrap reports its child killed
        return ("[sandbox: the command was ended by the sandbox's system-call filter (SIGSYS): 32-bit programs "
                "(i386, x32) cannot run in it]")
    if "Operation not permitted" in output and _MKNOD.search(command):
        return "[sandbox: commands cannot make device nodes (FIFOs with mkfifo, and files, they can)]"
    if ("No such process" in output or "Operation not permitted" in output) and _KILL.search(command):
        return ("[sandbox: commands see and signal only the processes they started themselves, in this same "
                "command; nothing outside, and nothing a previous command left (it ended with that command)]")
    return None
