"""The Landlock exec launcher: confines itself, then becomes the command.

Run as `python -I -S launcher.py SITE_DIR [--write PATH]... [--proxy-socket PATH] -- PROGRAM [ARG]...`
(or `... SITE_DIR --probe DIR` to test that Landlock works here). With `--proxy-socket`, a relay to
zeph's host proxy at PATH is forked first and PROGRAM gets the proxy variables (`proxy_relay.py`).

Invariant: PROGRAM is exec'd only after the Landlock ruleset is in force —
read and execute everywhere, every write right only beneath the `--write`
paths (missing ones are skipped) — and the restriction is inherited by every
process it starts. If the ruleset cannot be applied nothing runs: the launcher
exits with `EXIT_SANDBOX_FAILED` and one line on stderr.

Why a launcher rather than `preexec_fn`: the rules must be applied in the child
between fork and exec, and `preexec_fn` runs Python there, which CPython
documents as unsafe when the parent has threads (the chat app and
`asyncio.to_thread` do): a lock another thread held at fork time (the import
lock, a logging or allocator lock) can deadlock the child. It also rules out
vfork/posix_spawn. A separate interpreter costs ~50 ms per command and has no
such hazard; `-I -S` keeps the workspace, PYTHON* variables and .pth files out
of its import path, so a `landlock.py` in the workspace cannot stand in for the
real package. The same argv-prefix shape serves bubblewrap and sandbox-exec.

This file imports only the standard library, `landlock` (from SITE_DIR) and its
sibling `proxy_relay.py` (by path): never `zeph_cli`.
"""

from __future__ import annotations

import os
import stat
import sys

EXIT_SANDBOX_FAILED = 125
EXIT_NOT_ENFORCED = 3
MIN_ABI = 2  # ABI 1 refuses every rename or link between directories, even inside the workspace


class SandboxFailed(Exception):
    """Landlock cannot be applied; the message says why."""


def confine(writable: list[str]) -> int:
    """Apply the ruleset to this process; return the Landlock ABI version."""
    try:
        import landlock
        from landlock import FSAccess, Ruleset
    except ImportError as exc:
        raise SandboxFailed(f"the landlock package cannot be imported ({exc})") from None
    try:
        abi = landlock.landlock_abi_version()
        if abi < MIN_ABI:
            raise SandboxFailed(f"Landlock ABI {abi} (kernel before 5.19) cannot allow moving files between directories")
        # Device ioctls stay unhandled (allowed): GPUs and terminals need them; they write no file.
        handled = FSAccess.all() & ~FSAccess.IOCTL_DEV
        file_rights = FSAccess.all_file() & ~FSAccess.IOCTL_DEV
        ruleset = Ruleset(restrict_rules=handled)
        ruleset.allow("/", rules=FSAccess.READ_FILE | FSAccess.READ_DIR | FSAccess.EXECUTE)
        for path in writable:
            try:
                mode = os.stat(path).st_mode
            except OSError:
                continue
            ruleset.allow(path, rules=handled if stat.S_ISDIR(mode) else handled & file_rights)
        ruleset.apply()
    except landlock.LandlockError as exc:
        raise SandboxFailed(_why(exc)) from None
    except OSError as exc:
        raise SandboxFailed(f"Landlock: {exc.strerror or exc}") from None
    return abi


def _why(exc: Exception) -> str:
    reason = getattr(exc, "reason", None)
    strerror = getattr(exc, "strerror", None)
    text = reason or strerror or str(exc).splitlines()[0] or type(exc).__name__
    return f"Landlock: {text}"


def probe(directory: str) -> int:
    """Confine to `directory`/allowed and check a write beside it is refused and one inside works."""
    allowed = os.path.join(directory, "allowed")
    os.makedirs(allowed, exist_ok=True)
    abi = confine([allowed])
    try:
        with open(os.path.join(directory, "outside"), "w"):
            pass
    except PermissionError:
        pass
    else:
        print("Landlock did not refuse a write outside the allowed paths", file=sys.stderr)
        return EXIT_NOT_ENFORCED
    with open(os.path.join(allowed, "inside"), "w"):
        pass
    print(f"landlock ABI {abi}")
    return 0


def start_proxy_relay(socket_path: str) -> None:
    """Fork the relay to zeph's host proxy at `socket_path` and put the proxy variables in the environment
    PROGRAM gets. Done before `confine`, whose rules would stop the relay reaching the socket."""
    import importlib.util

    path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "proxy_relay.py")
    spec = importlib.util.spec_from_file_location("zeph_sandbox_proxy_relay", path)
    if spec is None or spec.loader is None:
        raise SandboxFailed(f"the network relay {path} cannot be loaded")
    relay = importlib.util.module_from_spec(spec)
    try:
        spec.loader.exec_module(relay)
        os.environ.update(relay.start(socket_path))
    except Exception as exc:  # noqa: BLE001 - RelayFailed says why; anything else is a broken install
        raise SandboxFailed(str(exc) or type(exc).__name__) from None


def main(argv: list[str]) -> int:
    if len(argv) < 2:
        print("usage: launcher.py SITE_DIR [--write PATH]... -- PROGRAM [ARG]...", file=sys.stderr)
        return EXIT_SANDBOX_FAILED
    sys.path.insert(0, argv[0])
    rest = argv[1:]
    try:
        if rest[0] == "--probe" and len(rest) == 2:
            return probe(rest[1])
        writable: list[str] = []
        proxy_socket: str | None = None
        while len(rest) > 1 and rest[0] in ("--write", "--proxy-socket"):
            if rest[0] == "--write":
                writable.append(rest[1])
            else:
                proxy_socket = rest[1]
            rest = rest[2:]
        if len(rest) < 2 or rest[0] != "--":
            print("launcher.py: expected -- PROGRAM [ARG]...", file=sys.stderr)
            return EXIT_SANDBOX_FAILED
        if proxy_socket is not None:
            start_proxy_relay(proxy_socket)
        confine(writable)
    except SandboxFailed as exc:
        print(f"zeph sandbox: {exc}; the command was not run", file=sys.stderr)
        return EXIT_SANDBOX_FAILED
    except OSError as exc:
        print(f"zeph sandbox: {exc}", file=sys.stderr)
        return EXIT_SANDBOX_FAILED
    program = rest[1:]
    try:
        os.execvp(program[0], program)
    except OSError as exc:
        print(f"zeph sandbox: cannot run {program[0]}: {exc.strerror or exc}", file=sys.stderr)
        return 127
    return 127  # not reached: execvp returns only by raising


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
