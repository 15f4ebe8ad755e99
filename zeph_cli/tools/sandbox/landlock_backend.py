"""The Landlock backend, parent side: the launcher's argv and the probe that checks it works.

Invariant: nothing here imports `landlock`; the package is only located
(`importlib.util.find_spec`) and used inside the child, by `launcher.py`. A
probe runs the real launcher in a child and passes only if Landlock refused a
write outside the allowed directory and allowed one inside it.
"""

from __future__ import annotations

import importlib.util
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from .policy import WRITABLE_DEVICES, SandboxPolicy

__all__ = ["LAUNCHER", "landlock_command", "landlock_site", "probe_landlock"]

LAUNCHER = Path(__file__).with_name("launcher.py")
PROBE_TIMEOUT_SECS = 15


def landlock_site() -> str | None:
    """The directory holding the installed `landlock` package, or None when it is not installed."""
    try:
        spec = importlib.util.find_spec("landlock")
    except (ImportError, ValueError):
        return None
    if spec is None or spec.origin is None:
        return None
    return str(Path(spec.origin).parent.parent)


def _launcher_prefix(site: str) -> list[str]:
    # -I: no PYTHON* variables, no cwd or user site on sys.path; -S: no .pth files run.
    return [launcher_interpreter(), "-I", "-S", str(LAUNCHER), site]


def launcher_interpreter() -> str:
    """A Python this user may run: the one running zeph, else the same version found on PATH. (A
    virtualenv's `python` may link through a directory the user cannot search — a root-owned pyenv
    under /root, with zeph started by root as another user. The launcher needs no virtualenv: it is
    given the site directory, and uses only the standard library besides.)"""
    try:
        running = os.readlink("/proc/self/exe")
    except OSError:
        running = sys.executable
    version = f"python{sys.version_info.major}.{sys.version_info.minor}"
    for candidate in (running, sys.executable, shutil.which(version)):
        if candidate and os.access(candidate, os.X_OK):
            return candidate
    return sys.executable


def landlock_command(policy: SandboxPolicy, program: list[str], site: str, *, proxy_socket: Path | None = None) -> list[str]:
    """`program` run under the launcher, writable where `policy` says; with `proxy_socket`, reaching the
    network through the allowed-hosts proxy listening there."""
    argv = _launcher_prefix(site)
    for path in (*policy.writable, *WRITABLE_DEVICES):
        argv += ["--write", str(path)]
    if proxy_socket is not None:
        argv += ["--proxy-socket", str(proxy_socket)]
    return [*argv, "--", *program]


def probe_landlock() -> str | None:
    """None when Landlock confines a child here; otherwise why not, in one line."""
    if not sys.platform.startswith("linux"):
        return f"Landlock is Linux-only (this is {sys.platform})"
    site = landlock_site()
    if site is None:
        return "the landlock Python package is not installed (pip install landlock)"
    with tempfile.TemporaryDirectory(prefix="zeph-landlock-probe-") as directory:
        try:
            done = subprocess.run(
                [*_launcher_prefix(site), "--probe", directory],
                capture_output=True, text=True, stdin=subprocess.DEVNULL, timeout=PROBE_TIMEOUT_SECS,
            )
        except (OSError, subprocess.TimeoutExpired) as exc:
            return f"the Landlock probe could not run ({exc})"
    if done.returncode == 0:
        return None
    lines = [line for line in done.stderr.splitlines() if line.strip()]
    reason = lines[-1] if lines else f"the Landlock probe exited with code {done.returncode}"
    return reason.removeprefix("zeph sandbox: ").removesuffix("; the command was not run")
