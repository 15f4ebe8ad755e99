"""How many processes a sandboxed command may have at once.

Invariant: `ProcessLimit.prefix()` returns an argv prefix (a one-line `/bin/sh` script that then
execs the rest) which puts the command and everything it starts under the limit before any of it
runs: a `pids` cgroup when zeph runs as root (the kernel never applies RLIMIT_NPROC to root, even
inside a user namespace) and the cgroup can be made, RLIMIT_NPROC otherwise (set to what the user
runs now plus the limit, since it counts all of the user's processes). If the cgroup cannot
be joined the script exits with 125 and runs nothing. When zeph itself already runs under a pids
limit (as root inside a sandbox, where no cgroup can be made), that limit holds its commands too.
`missing` says why there is no limit, when there is none. The cgroup is made once per sandbox and removed when it is collected.
"""

from __future__ import annotations

import itertools
import os
import shlex
import weakref
from pathlib import Path

__all__ = ["ProcessLimit"]

V1_PIDS = Path("/sys/fs/cgroup/pids")
_SERIAL = itertools.count()
V2_ROOT = Path("/sys/fs/cgroup")


class ProcessLimit:
    def __init__(self, limit: int, *, euid: int | None = None) -> None:
        self.limit = limit
        self.cgroup: Path | None = None
        self.missing: str | None = None
        self.inherited = False
        if (os.geteuid() if euid is None else euid) == 0:
            self.cgroup, self.missing = _make_cgroup(limit)
            if self.cgroup is not None:
                weakref.finalize(self, _remove_cgroup, self.cgroup)
            elif _inherited_limit() is not None:  # zeph itself runs under a pids limit (inside a sandbox, say)
                self.missing = None
                self.inherited = True

    def prefix(self) -> list[str]:
        if self.cgroup is not None:
            procs = shlex.quote(str(self.cgroup / "cgroup.procs"))
            script = f'echo $$ > {procs} || exit 125; exec "$@"'
        elif self.inherited:
            return []
        elif self.missing is None:
            # RLIMIT_NPROC counts every process and thread of the user, not the command's alone: the
            # command may have `limit` more than the user runs now.
            ceiling = self.limit + tasks_of(os.getuid())
            script = f'ulimit -p {ceiling} 2>/dev/null || ulimit -u {ceiling}; exec "$@"'
        else:
            return []
        return ["/bin/sh", "-c", script, "zeph-sandbox"]


def tasks_of(uid: int) -> int:
    """How many processes and threads the user `uid` runs now (what RLIMIT_NPROC counts)."""
    total = 0
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            status = (entry / "status").read_text()
        except OSError:
            continue
        fields = dict(line.split(":", 1) for line in status.splitlines() if ":" in line)
        if fields.get("Uid", "").split()[:1] == [str(uid)]:
            total += int(fields.get("Threads", "1").strip() or 1)
    return total


def _own_cgroup(controller: str) -> tuple[str | None, str | None]:
    """(v1 path, v2 path) of this process's cgroup, from /proc/self/cgroup."""
    v1 = v2 = None
    try:
        lines = Path("/proc/self/cgroup").read_text().splitlines()
    except OSError:
        return None, None
    for line in lines:
        parts = line.split(":", 2)
        if len(parts) != 3:
            continue
        if controller in parts[1].split(","):
            v1 = parts[2]
        elif parts[0] == "0":
            v2 = parts[2]
    return v1, v2


def _make_cgroup(limit: int) -> tuple[Path | None, str | None]:
    v1, v2 = _own_cgroup("pids")
    candidates: list[Path] = []
    if v1 is not None and V1_PIDS.is_dir():
        candidates.append(V1_PIDS / v1.lstrip("/"))
    if v2 is not None:
        base = V2_ROOT / v2.lstrip("/")
        if "pids" in _read(base / "cgroup.subtree_control").split():
            candidates.append(base)
    why = "no writable pids cgroup (root is not held by RLIMIT_NPROC)"
    for base in candidates:
        _sweep(base)
        group = base / f"zeph-sandbox-{os.getpid()}-{next(_SERIAL)}"
        try:
            group.mkdir()
            (group / "pids.max").write_text(f"{limit}\n")
        except OSError as exc:
            why = f"cannot make a pids cgroup in {base} ({exc.strerror or exc}; root is not held by RLIMIT_NPROC)"
            _remove_cgroup(group)
            continue
        return group, None
    return None, why


def _sweep(base: Path) -> None:
    """Remove the empty cgroups left by zeph processes that were killed before they could."""
    try:
        groups = list(base.glob("zeph-sandbox-*"))
    except OSError:
        return
    for group in groups:
        pid = group.name.split("-")[2]
        if pid.isdigit() and not Path(f"/proc/{pid}").exists():
            _remove_cgroup(group)


def _inherited_limit() -> int | None:
    """The pids limit of the cgroup this process runs in or one above it (v1 or v2), if any."""
    v1, v2 = _own_cgroup("pids")
    for root, own in ((V1_PIDS, v1), (V2_ROOT, v2)):
        if own is None:
            continue
        group = root / own.lstrip("/")
        while group != root and group.is_relative_to(root):
            value = _read(group / "pids.max").strip()
            if value.isdigit():
                return int(value)
            group = group.parent
    return None


def _read(path: Path) -> str:
    try:
        return path.read_text()
    except OSError:
        return ""


def _remove_cgroup(group: Path) -> None:
    try:
        group.rmdir()
    except OSError:
        pass
