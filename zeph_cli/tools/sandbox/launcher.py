"""The Landlock exec launcher: confines itself, then becomes the command.

Run as `python -I -S launcher.py SITE_DIR [--write PATH]... [--require NAME]...
[--allow-abstract-unix] [--proxy-socket PATH] -- PROGRAM [ARG]...` (or `... SITE_DIR --probe DIR` to
test, in a child, what can be applied here). With `--proxy-socket`, a relay to zeph's host proxy at
PATH is forked first and PROGRAM gets the proxy variables (`proxy_relay.py`).

Invariant: PROGRAM is exec'd only after the Landlock ruleset is in force —
read and execute everywhere, every write right only beneath the `--write`
paths (missing ones are skipped), device nodes nowhere — and the restriction
is inherited by every process it starts. If the ruleset cannot be applied
nothing runs: the launcher exits with `EXIT_SANDBOX_FAILED` and one line on
stderr. Then the optional protections (`OPTIONAL`) are applied where this
kernel has them: Landlock scopes (no signal to, and no abstract unix socket
of, a process outside the sandbox; `seccomp_filter`'s and `landlock_scopes`'
invariants say what each refuses) and the seccomp filter. One that is missing
is skipped, unless it is named by `--require`: the parent names those the
probe found working, so every command gets what the probe reported, or none
runs. `--allow-abstract-unix` leaves out the abstract-socket scope.

`--probe DIR` applies all of it, checks each part refuses what it should
(a write beside DIR/allowed, a signal to the parent, a connect to an abstract
socket bound before, a device node and TIOCSTI), and prints one JSON line:
{"landlock_abi": N, "applied": [NAME...], "missing": {NAME: why}}.

Why a launcher rather than `preexec_fn`: the rules must be applied in the child
between fork and exec, and `preexec_fn` runs Python there, which CPython
documents as unsafe when the parent has threads (the chat app and
`asyncio.to_thread` do): a lock another thread held at fork time (the import
lock, a logging or allocator lock) can deadlock the child. It also rules out
vfork/posix_spawn. A separate interpreter costs ~30 ms per command
(benchmarks/sandbox_launch.py) and has no such hazard; `-I -S` keeps the
workspace, PYTHON* variables and .pth files out of its import path, so a
`landlock.py` in the workspace cannot stand in for the real package. The same
argv-prefix shape serves bubblewrap and sandbox-exec.

This file imports only the standard library, `landlock` (from SITE_DIR) and
its siblings `landlock_scopes.py`, `seccomp_filter.py` and `proxy_relay.py` (loaded by path,
standard library only): never `zeph_cli`.
"""

from __future__ import annotations

import errno
import os
import signal
import stat
import sys

EXIT_SANDBOX_FAILED = 125
EXIT_NOT_ENFORCED = 3
MIN_ABI = 2  # ABI 1 refuses every rename or link between directories, even inside the workspace
# The optional protections, in the order they are applied and reported.
OPTIONAL = ("scope-signal", "scope-abstract-unix", "seccomp")
HERE = os.path.dirname(os.path.abspath(__file__))


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
        # Handled but granted nowhere: no character or block device can be made, even where writes are allowed
        # (a block device for a disk, made in the workspace, would write anywhere on it).
        writable_rights = handled & ~(FSAccess.MAKE_CHAR | FSAccess.MAKE_BLOCK)
        ruleset = Ruleset(restrict_rules=handled)
        ruleset.allow("/", rules=FSAccess.READ_FILE | FSAccess.READ_DIR | FSAccess.EXECUTE)
        for path in writable:
            try:
                mode = os.stat(path).st_mode
            except OSError:
                continue
            ruleset.allow(path, rules=writable_rights if stat.S_ISDIR(mode) else writable_rights & file_rights)
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


def _sibling(name: str):
    """`name`.py beside this file, loaded by path (sys.path holds SITE_DIR, which must not stand in for it)."""
    import importlib.util

    spec = importlib.util.spec_from_file_location(f"_zeph_sandbox_{name}", os.path.join(HERE, f"{name}.py"))
    if spec is None or spec.loader is None:
        raise ImportError(f"{name}.py is missing beside the launcher")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def load_protections() -> tuple[dict[str, object], dict[str, str]]:
    """The sibling modules that apply the optional protections ({file stem: module}, {missing: why}), loaded
    before anything is confined so that a broken install shows as missing rather than half-applied."""
    modules: dict[str, object] = {}
    missing: dict[str, str] = {}
    for stem, names in (("landlock_scopes", OPTIONAL[:2]), ("seccomp_filter", OPTIONAL[2:])):
        try:
            modules[stem] = _sibling(stem)
        except (ImportError, OSError, SyntaxError) as exc:
            missing.update((name, f"{stem}.py cannot be loaded ({exc})") for name in names)
    return modules, missing


def harden(
    abi: int, loaded: tuple[dict[str, object], dict[str, str]], *, scope_abstract_unix: bool = True
) -> tuple[list[str], dict[str, str]]:
    """Apply the optional protections this kernel has, after `confine`, with what `load_protections` gave:
    (applied, {missing: why})."""
    modules, missing = loaded[0], dict(loaded[1])
    applied: list[str] = []
    names = ["signal", "abstract-unix"] if scope_abstract_unix else ["signal"]
    scopes = modules.get("landlock_scopes")
    if scopes is not None:
        try:
            scopes.restrict(names, abi)  # type: ignore[attr-defined]
            applied += [f"scope-{name}" for name in names]
        except scopes.ScopesUnavailable as exc:  # type: ignore[attr-defined]
            missing.update((f"scope-{name}", str(exc)) for name in names)
    seccomp = modules.get("seccomp_filter")
    if seccomp is not None:
        try:
            seccomp.install()  # type: ignore[attr-defined]
            applied.append("seccomp")
        except seccomp.SeccompUnavailable as exc:  # type: ignore[attr-defined]
            missing["seccomp"] = str(exc)
    return applied, missing


def _refused(action) -> str | None:
    """None when `action` fails with EPERM or EACCES (refused), else what happened instead."""
    try:
        action()
    except PermissionError:
        return None
    except OSError as exc:
        return errno.errorcode.get(exc.errno or 0, str(exc))
    return "it succeeded"


def _check(applied: list[str], missing: dict[str, str], name: str, what: str, action) -> None:
    if name not in applied:
        return
    outcome = _refused(action)
    if outcome is not None:
        applied.remove(name)
        missing[name] = f"applied but {what} was not refused ({outcome})"


def probe(directory: str) -> int:
    """Confine to `directory`/allowed, harden, check each part refuses what it should; print what works as JSON."""
    import json
    import socket

    allowed = os.path.join(directory, "allowed")
    os.makedirs(allowed, exist_ok=True)
    server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)  # bound outside the sandbox, before it
    address = f"\0zeph-probe-{os.getpid()}-{os.urandom(4).hex()}"
    server.bind(address)
    server.listen(1)
    devnull = os.open(os.devnull, os.O_RDWR)  # opened before: the probe may write only beneath `allowed`
    loaded = load_protections()
    abi = confine([allowed])
    applied, missing = harden(abi, loaded)
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
    _check(applied, missing, "scope-signal", "a signal to the parent", lambda: os.kill(os.getppid(), 0))
    client = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    _check(applied, missing, "scope-abstract-unix", "a connect to an abstract socket outside",
           lambda: client.connect(address))
    # Refused by the filter (EPERM) before the kernel looks further: ENOTTY and ENOENT without it.
    _check(applied, missing, "seccomp", "TIOCSTI", lambda: _ioctl(devnull, 0x5412))
    _check(applied, missing, "seccomp", "a character device", lambda: os.mknod("", stat.S_IFCHR | 0o600, 0))
    _check(applied, missing, "seccomp", "a block device", lambda: os.mknod("", stat.S_IFBLK | 0o600, 0))
    print(json.dumps({"landlock_abi": abi, "applied": applied, "missing": missing}))
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


def _ioctl(fd: int, request: int) -> None:
    import fcntl

    fcntl.ioctl(fd, request, b"x")


def main(argv: list[str]) -> int:
    if len(argv) < 2:
        print("usage: launcher.py SITE_DIR [--write PATH]... [--require NAME]... [--proxy-socket PATH] -- PROGRAM [ARG]...",
              file=sys.stderr)
        return EXIT_SANDBOX_FAILED
    sys.path.insert(0, argv[0])
    rest = argv[1:]
    try:
        if rest[0] == "--probe" and len(rest) == 2:
            return probe(rest[1])
        writable: list[str] = []
        required: list[str] = []
        proxy_socket: str | None = None
        scope_abstract_unix = True
        while rest and rest[0] != "--":
            if rest[0] == "--write" and len(rest) > 1:
                writable.append(rest[1])
            elif rest[0] == "--require" and len(rest) > 1:
                if rest[1] not in OPTIONAL:
                    print(f"launcher.py: --require {rest[1]!r}: expected one of {', '.join(OPTIONAL)}", file=sys.stderr)
                    return EXIT_SANDBOX_FAILED
                required.append(rest[1])
            elif rest[0] == "--proxy-socket" and len(rest) > 1:
                proxy_socket = rest[1]
            elif rest[0] == "--allow-abstract-unix":
                scope_abstract_unix = False
                rest = rest[1:]
                continue
            else:
                print(f"launcher.py: unknown option {rest[0]!r}; expected -- PROGRAM [ARG]...", file=sys.stderr)
                return EXIT_SANDBOX_FAILED
            rest = rest[2:]
        if len(rest) < 2:
            print("launcher.py: expected -- PROGRAM [ARG]...", file=sys.stderr)
            return EXIT_SANDBOX_FAILED
        if proxy_socket is not None:
            start_proxy_relay(proxy_socket)  # before the rules, which would stop the relay reaching the socket
        loaded = load_protections()
        abi = confine(writable)
        applied, missing = harden(abi, loaded, scope_abstract_unix=scope_abstract_unix)
        for name in required:
            if name not in applied:
                why = missing.get(name, "--allow-abstract-unix leaves it out")
                raise SandboxFailed(f"{name} worked when probed but cannot be applied now ({why})")
    except SandboxFailed as exc:
        print(f"zeph sandbox: {exc}; the command was not run", file=sys.stderr)
        return EXIT_SANDBOX_FAILED
    except OSError as exc:
        print(f"zeph sandbox: {exc}", file=sys.stderr)
        return EXIT_SANDBOX_FAILED
    program = rest[1:]
    # Python ignores SIGPIPE and SIGXFSZ, and exec keeps what is ignored: `yes | head -1` would print
    # "Broken pipe" and loop instead of ending. The command gets the defaults a shell would give it.
    for name in ("SIGPIPE", "SIGXFSZ"):
        if hasattr(signal, name):
            signal.signal(getattr(signal, name), signal.SIG_DFL)
    try:
        os.execvp(program[0], program)
    except OSError as exc:
        print(f"zeph sandbox: cannot run {program[0]}: {exc.strerror or exc}", file=sys.stderr)
        return 127
    return 127  # not reached: execvp returns only by raising


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
