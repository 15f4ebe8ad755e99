"""The Landlock backend, parent side: the launcher's argv and the probe that checks what works.

Invariant: nothing here imports `landlock`; the package is only located
(`importlib.util.find_spec`) and used inside the child, by `launcher.py`. A
probe runs the real launcher in a child and passes only if Landlock refused a
write outside the allowed directory and allowed one inside it; the optional
protections (Landlock scopes, the seccomp filter) it reports are those it saw
refuse what they should. The probe runs once per process (`landlock_probe`),
and every command's launcher is told to require what it found, so what
`LandlockProbe.describe` says is what each command gets.
"""

from __future__ import annotations

import functools
import importlib.util
import json
import os
import shutil
import subprocess
import sys
import tempfile
import threading
from dataclasses import dataclass
from pathlib import Path

from .policy import WRITABLE_DEVICES, SandboxPolicy

__all__ = ["LAUNCHER", "LandlockProbe", "landlock_command", "landlock_probe", "landlock_site", "probe_landlock"]

LAUNCHER = Path(__file__).with_name("launcher.py")
PROBE_TIMEOUT_SECS = 15
# The launcher's optional protections (launcher.OPTIONAL), in its order, and how they are named to the user.
PROTECTIONS = {
    "scope-signal": "signals",
    "scope-abstract-unix": "abstract sockets",
    "seccomp": "seccomp",
}


@dataclass(frozen=True)
class LandlockProbe:
    """What the probe found: `problem` is why Landlock does not confine here (None: it does)."""

    problem: str | None
    abi: int = 0
    applied: tuple[str, ...] = ()  # names from PROTECTIONS, checked to work
    missing: tuple[tuple[str, str], ...] = ()  # (name, why) for the others

    def describe(self) -> str:
        """`landlock ABI 7, seccomp, scopes: signals, abstract sockets` (what each command gets)."""
        parts = [f"landlock ABI {self.abi}"]
        if "seccomp" in self.applied:
            parts.append("seccomp")
        scopes = [PROTECTIONS[n] for n in self.applied if n.startswith("scope-")]
        if scopes:
            parts.append("scopes: " + ", ".join(scopes))
        return ", ".join(parts)

    def missing_line(self) -> str | None:
        """`no Landlock scopes (signals, abstract sockets): why; no seccomp filter: why`, or None."""
        parts = []
        scopes = [(name, why) for name, why in self.missing if name.startswith("scope-")]
        if scopes:
            names = ", ".join(PROTECTIONS[name] for name, _ in scopes)
            whys = "; ".join(dict.fromkeys(why for _, why in scopes))
            parts.append(f"no Landlock scope{'s' if len(scopes) > 1 else ''} ({names}): {whys}")
        parts += [f"no seccomp filter: {why}" for name, why in self.missing if name == "seccomp"]
        return "; ".join(parts) or None


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


def landlock_command(
    policy: SandboxPolicy, program: list[str], site: str, *, allow_abstract_unix: bool = False,
    proxy_socket: Path | None = None,
) -> list[str]:
    """`program` run under the launcher, writable where `policy` says, with the protections the probe found
    required (the launcher refuses to run it without them). `allow_abstract_unix` lets it reach abstract unix
    sockets bound outside (an X11 display, a session bus listening on `@name`); with `proxy_socket`, it
    reaches the network through the allowed-hosts proxy listening there."""
    argv = _launcher_prefix(site)
    for path in (*policy.writable, *WRITABLE_DEVICES):
        argv += ["--write", str(path)]
    if allow_abstract_unix:
        argv.append("--allow-abstract-unix")
    if proxy_socket is not None:
        argv += ["--proxy-socket", str(proxy_socket)]
    for name in landlock_probe().applied:
        if not (allow_abstract_unix and name == "scope-abstract-unix"):
            argv += ["--require", name]
    return [*argv, "--", *program]


def probe_landlock() -> str | None:
    """None when Landlock confines a child here; otherwise why not, in one line."""
    return landlock_probe().problem


_probe_lock = threading.Lock()


def landlock_probe() -> LandlockProbe:
    """The probe's answer, found once per process (in a child, the first time it is asked)."""
    with _probe_lock:
        return _probe_once()


@functools.cache
def _probe_once() -> LandlockProbe:
    problem = _run_probe()
    return problem if isinstance(problem, LandlockProbe) else LandlockProbe(problem)


def _run_probe() -> LandlockProbe | str:
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
        try:
            found = json.loads(done.stdout.strip().splitlines()[-1])
            applied = tuple(n for n in PROTECTIONS if n in found["applied"])
            missing = tuple((n, str(found["missing"][n])) for n in PROTECTIONS if n in found["missing"])
            return LandlockProbe(None, int(found["landlock_abi"]), applied, missing)
        except (ValueError, LookupError, TypeError):
            return f"the Landlock probe answered {done.stdout.strip()[:200]!r}"
    lines = [line for line in done.stderr.splitlines() if line.strip()]
    reason = lines[-1] if lines else f"the Landlock probe exited with code {done.returncode}"
    return reason.removeprefix("zeph sandbox: ").removesuffix("; the command was not run")
