"""Landlock scopes: what a sandboxed command may not reach in processes outside its own sandbox.

Invariant: `restrict(scopes)` either adds to this process (and all it forks or
execs) a Landlock layer scoping the named IPC to its own domain — "signal": no
signal (kill, tkill, pidfd_send_signal, SIGIO through fcntl) to a process
outside; "abstract-unix": no connect or send to an abstract unix socket
(`@name`: X11, D-Bus, tmux-like servers) bound outside — or raises
`ScopesUnavailable` having changed nothing. Processes the command starts
itself stay reachable; files and the network are not this layer's business
(the file-system layer the launcher applies first does that).

Scopes need Landlock ABI 6 (Linux 6.12). The `landlock` package has no field
for them, so the layer is made here with ctypes: a ruleset that handles no file
or network access and scopes the given IPC. The caller must have set
no_new_privs (applying the file-system layer does). Standard library only: the
launcher loads this file by path.
"""

from __future__ import annotations

import ctypes
import os

__all__ = ["MIN_SCOPE_ABI", "SCOPES", "ScopesUnavailable", "restrict"]

MIN_SCOPE_ABI = 6
SCOPES = {"abstract-unix": 1 << 0, "signal": 1 << 1}  # LANDLOCK_SCOPE_ABSTRACT_UNIX_SOCKET, LANDLOCK_SCOPE_SIGNAL
# The same numbers on every architecture (the unified syscall table).
SYS_LANDLOCK_CREATE_RULESET = 444
SYS_LANDLOCK_RESTRICT_SELF = 446


class ScopesUnavailable(Exception):
    """No scope was applied; the message says why."""


class _RulesetAttr(ctypes.Structure):
    _fields_ = [
        ("handled_access_fs", ctypes.c_uint64),
        ("handled_access_net", ctypes.c_uint64),
        ("scoped", ctypes.c_uint64),
    ]


def restrict(scopes: list[str], abi: int) -> None:
    """Scope `scopes` (names from `SCOPES`) to this process's new Landlock domain; `abi` is the kernel's."""
    if abi < MIN_SCOPE_ABI:
        raise ScopesUnavailable(f"Landlock ABI {abi} has no scopes (ABI {MIN_SCOPE_ABI}, Linux 6.12, brings them)")
    scoped = 0
    for name in scopes:
        scoped |= SCOPES[name]
    libc = ctypes.CDLL(None, use_errno=True)
    syscall = libc.syscall
    syscall.restype = ctypes.c_long
    attr = _RulesetAttr(0, 0, scoped)
    fd = syscall(ctypes.c_long(SYS_LANDLOCK_CREATE_RULESET), ctypes.byref(attr), ctypes.c_size_t(ctypes.sizeof(attr)),
                 ctypes.c_uint32(0))
    if fd < 0:
        raise ScopesUnavailable(f"landlock_create_ruleset: {os.strerror(ctypes.get_errno())}")
    try:
        if syscall(ctypes.c_long(SYS_LANDLOCK_RESTRICT_SELF), ctypes.c_int(fd), ctypes.c_uint32(0)) != 0:
            raise ScopesUnavailable(f"landlock_restrict_self: {os.strerror(ctypes.get_errno())}")
    finally:
        os.close(fd)
