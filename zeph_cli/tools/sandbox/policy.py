"""What a sandboxed command may do: the policy value every backend enforces.

Invariant: a sandboxed command may read everywhere and write only beneath the
paths in `writable` (all resolved, absolute) and the harmless devices in
`WRITABLE_DEVICES`; `network` says whether it may use the network. The value
is pure data, built from settings without touching the file system beyond
resolving paths.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

__all__ = ["SandboxPolicy", "WRITABLE_DEVICES", "build_policy"]

# Devices any program may need to write (discarding output, terminals, POSIX shared memory).
WRITABLE_DEVICES = ("/dev/null", "/dev/zero", "/dev/full", "/dev/tty", "/dev/ptmx", "/dev/pts", "/dev/shm")


@dataclass(frozen=True)
class SandboxPolicy:
    """The confinement of one agent's commands. `profile` is "workspace" or "read-only"."""

    profile: str
    writable: tuple[Path, ...]  # the private temp dir first
    temp_dir: Path
    network: bool

    @property
    def roots(self) -> tuple[Path, ...]:
        """The writable paths but the private temp dir: what the workspace profile opens."""
        return tuple(p for p in self.writable if p != self.temp_dir)

    def allows_write(self, path: Path) -> bool:
        """Whether writing `path` (resolved) falls beneath a writable path."""
        resolved = Path(os.path.realpath(path))
        devices = (Path(d) for d in WRITABLE_DEVICES)
        return any(resolved == base or resolved.is_relative_to(base) for base in (*self.writable, *devices))

    def describe(self) -> str:
        """`workspace, network allowed`: the profile and the network rule in words."""
        return f"{self.profile}, network {'allowed' if self.network else 'blocked'}"


def build_policy(
    profile: str, workspace: Iterable[Path], allow_write: Iterable[str], temp_dir: Path, *, network: bool, cwd: Path
) -> SandboxPolicy:
    """The policy for `profile`: "workspace" writes the workspace roots (the workspace and
    tools.allowed_paths), `allow_write` and `temp_dir`; "read-only" writes `temp_dir` only.
    Relative `allow_write` entries are taken from `cwd`; `~` is expanded."""
    writable = [temp_dir]
    if profile == "workspace":
        writable += list(workspace)
        for raw in allow_write:
            path = Path(raw).expanduser()
            writable.append(path if path.is_absolute() else cwd / path)
    resolved: list[Path] = []
    for path in writable:
        real = Path(os.path.realpath(path))
        if real not in resolved:
            resolved.append(real)
    return SandboxPolicy(profile, tuple(resolved), resolved[0], network)
