"""Commands that run another command: wrappers (`sudo`, `env`, `xargs`, …) and
shells or builtins handed a script (`bash -c`, `eval`, `trap`).

Invariant: pure; a wrapper's inner command is named by its position in argv or
as script text, and options that make it run nothing yield no inner command.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from .argv import getopt
from .commands import SimpleCommand
from .programs import SHELLS, program_source

@dataclass(frozen=True)
class _Inner:
    index: int = 0  # argv[index:] is the command run …
    script: str | None = None  # … or this shell script is run instead
    chdir: str | None = None
    from_xargs: bool = False
    xargs_replace: str = ""  # `xargs -I R`: R is replaced by each input line in the arguments
    elsewhere: bool = False  # runs in a directory not known here (another host, another root)


_ASSIGNMENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*=")


def _skip_assignments(argv: Sequence[str], i: int) -> int:
    while i < len(argv) and _ASSIGNMENT.match(argv[i]):
        i += 1
    return i


def _has(options: list[tuple[str, str | None]], *names: str) -> bool:
    return any(option in names for option, _ in options)


def _value(options: list[tuple[str, str | None]], *names: str) -> str | None:
    found = None
    for option, value in options:
        if option in names:
            found = value
    return found


def _sudo(argv: Sequence[str]) -> _Inner | None:
    long_values = {
        "--chdir", "--close-from", "--group", "--host", "--prompt", "--chroot", "--role", "--type",
        "--command-timeout", "--other-user", "--user",
    }
    i, options = getopt(argv, "CDghpRrtTUu", long_values)
    if _has(options, "-e", "--edit", "-l", "--list"):
        return None
    return _Inner(_skip_assignments(argv, i), chdir=_value(options, "-D", "--chdir"))


def _env(argv: Sequence[str]) -> _Inner | None:
    long_values = {"--unset", "--chdir", "--split-string", "--argv0"}
    i, options = getopt(argv, "uCSPa", long_values)
    while i < len(argv) and (argv[i] == "-" or _ASSIGNMENT.match(argv[i])):
        i, more = getopt(argv, "uCSPa", long_values, start=i + 1)
        options += more
    chdir = _value(options, "-C", "--chdir")
    split = _value(options, "-S", "--split-string")
    if split is not None:
        return _Inner(script=" ".join([split, *argv[i:]]), chdir=chdir)
    return _Inner(i, chdir=chdir)


def _command_builtin(argv: Sequence[str]) -> _Inner | None:
    i, options = getopt(argv, "")
    return None if _has(options, "-v", "-V") else _Inner(i)


def _ionice(argv: Sequence[str]) -> _Inner | None:
    i, options = getopt(argv, "cnpPu", {"--class", "--classdata", "--pid", "--pgid", "--uid"})
    return None if _has(options, "-p", "-P", "-u", "--pid", "--pgid", "--uid") else _Inner(i)


def _timeout(argv: Sequence[str]) -> _Inner:
    i, _ = getopt(argv, "ks", {"--kill-after", "--signal"})
    return _Inner(i + 1)  # the duration comes first


def _taskset(argv: Sequence[str]) -> _Inner | None:
    i, options = getopt(argv, "")
    return None if _has(options, "-p", "--pid") else _Inner(i + 1)  # the CPU mask comes first


def _chrt(argv: Sequence[str]) -> _Inner | None:
    i, options = getopt(argv, "TPD", {"--sched-runtime", "--sched-period", "--sched-deadline"})
    return None if _has(options, "-p", "--pid") else _Inner(i + 1)  # the priority comes first


def _xargs(argv: Sequence[str]) -> _Inner:
    long_values = {"--arg-file", "--delimiter", "--max-args", "--max-procs", "--max-chars", "--process-slot-var"}
    i, options = getopt(argv, "adEILnPs", long_values)
    replace = ""
    for option, value in options:
        if option == "-I" and value:
            replace = value
        elif option == "--replace":
            replace = value or "{}"
        elif option == "-i":  # -i[R]: R attached or {} (getopt splits an attached R into flags)
            replace = "{}"
    for arg in argv[1:i]:
        if arg.startswith("-i") and len(arg) > 2:
            replace = arg[2:]
    return _Inner(i, from_xargs=True, xargs_replace=replace)


def _watch(argv: Sequence[str]) -> _Inner:
    i, options = getopt(argv, "nq", {"--interval", "--equexit"})
    if _has(options, "-x", "--exec"):
        return _Inner(i)
    return _Inner(script=" ".join(argv[i:]))  # watch hands its arguments to `sh -c`


def _su(argv: Sequence[str]) -> _Inner | None:
    i, n = 1, len(argv)
    while i < n:
        arg = argv[i]
        if arg in ("--command", "--session-command"):
            return _Inner(script=argv[i + 1]) if i + 1 < n else None
        if arg.startswith(("--command=", "--session-command=")):
            return _Inner(script=arg.split("=", 1)[1])
        if arg.startswith("-") and not arg.startswith("--"):
            for k, char in enumerate(arg[1:], 1):
                rest = arg[k + 1:]
                if char == "c":
                    if rest:
                        return _Inner(script=rest)
                    return _Inner(script=argv[i + 1]) if i + 1 < n else None
                if char in "gGsw":
                    if not rest:
                        i += 1
                    break
        i += 1
    return None


def _runuser(argv: Sequence[str]) -> _Inner | None:
    """runuser -u USER [--] COMMAND runs COMMAND; other forms read like su."""
    i, options = getopt(argv, "ugGw", {"--user", "--group", "--supp-group", "--whitelist-environment"})
    if _has(options, "-u", "--user") and not _has(options, "-c", "-l", "--login"):
        return _Inner(i) if i < len(argv) else None
    return _su(argv)


def _flock(argv: Sequence[str]) -> _Inner | None:
    """flock [options] FILE COMMAND…, or flock FILE -c SCRIPT; flock FD runs nothing."""
    long_values = {"--timeout", "--wait", "--conflict-exit-code", "--command"}
    i, options = getopt(argv, "wEc", long_values)
    script = _value(options, "-c", "--command")
    if script is not None:
        return _Inner(script=script)
    j, more = getopt(argv, "wEc", long_values, start=i + 1)
    script = _value(more, "-c", "--command")
    if script is not None:
        return _Inner(script=script)
    return _Inner(j) if j < len(argv) else None


def _parallel(argv: Sequence[str]) -> _Inner | None:
    """GNU parallel runs its command through a shell, arguments from `:::` or input appended."""
    long_values = {"--jobs", "--halt", "--joblog", "--results", "--delay", "--timeout", "--retries", "--sshlogin",
                   "--arg-file", "--colsep", "--delimiter", "--workdir", "--tmpdir", "--env", "--basefile"}
    i, _ = getopt(argv, "jaCdSPEIX", long_values)
    words = list(argv[i:])
    values: list[str] = []
    separators = [k for k, word in enumerate(words) if word in (":::", ":::+")]
    if separators:
        values = [w for w in words[separators[0] + 1:] if w not in (":::", ":::+")]
    for separator in (":::", "::::", ":::+", "::::+"):
        if separator in words:
            words = words[:words.index(separator)]
    if not words:
        return None
    template = " ".join(words)
    if not values:
        return _Inner(script=template, from_xargs=True)
    runs = [template.replace("{}", v) if "{}" in template else f"{template} {v}" for v in values]
    return _Inner(script="\n".join(runs))


def _tracer(short_values: str, long_values: frozenset[str] = frozenset()) -> Callable[[Sequence[str]], _Inner | None]:
    """strace/ltrace/valgrind: the traced command follows the options; `-p PID` attaches instead."""

    def unwrap(argv: Sequence[str]) -> _Inner | None:
        i, options = getopt(argv, short_values, long_values)
        return None if _has(options, "-p", "--attach") or i >= len(argv) else _Inner(i)

    return unwrap


def _after_operands(count: int, short_values: str = "", long_values: frozenset[str] = frozenset()) -> Callable[[Sequence[str]], _Inner]:
    """Wrappers whose command follows `count` operands of their own (chroot NEWROOT, sg GROUP, …)."""

    def unwrap(argv: Sequence[str]) -> _Inner:
        i, _ = getopt(argv, short_values, long_values)
        return _Inner(i + count, elsewhere=argv[0] == "chroot")

    return unwrap


def _sg(argv: Sequence[str]) -> _Inner | None:
    """sg GROUP [-c] SCRIPT hands SCRIPT to a shell."""
    words = [a for a in argv[2:] if a != "-c"]
    return _Inner(script=" ".join(words)) if len(argv) > 2 and words else None


def _script(argv: Sequence[str]) -> _Inner | None:
    _, options = getopt(argv, "cEIOBTmt", {"--command", "--echo", "--log-in", "--log-out", "--log-io", "--logging-format", "--timing"})
    script = _value(options, "-c", "--command")
    return _Inner(script=script) if script else None


def _ip(argv: Sequence[str]) -> _Inner | None:
    """ip netns exec NAME COMMAND…, ip vrf exec NAME COMMAND…"""
    words = [a for a in argv[1:] if not a.startswith("-")]
    if len(words) >= 3 and words[0] in ("netns", "vrf") and words[1] == "exec":
        return _Inner(argv.index(words[2], argv.index(words[1]) + 1) + 1)
    return None


def _capsh(argv: Sequence[str]) -> _Inner | None:
    """capsh … -- -c SCRIPT runs SCRIPT with bash."""
    rest = list(argv[argv.index("--") + 1:]) if "--" in argv else []
    return _Inner(script=rest[1]) if rest[:1] == ["-c"] and len(rest) > 1 else None


def _terminal_multiplexer(argv: Sequence[str]) -> _Inner | None:
    """tmux new-session/new-window/split-window/run-shell … SCRIPT; screen [-dmS name] COMMAND…"""
    if argv[0] == "screen":
        i, _ = getopt(argv, "SscehpTtLl")
        return _Inner(i) if i < len(argv) else None
    verbs = {"new-session", "new", "new-window", "neww", "split-window", "splitw", "run-shell", "run", "respawn-pane"}
    for index, arg in enumerate(argv[1:], 1):
        if arg in verbs:
            j, _ = getopt(argv, "cFnstxye", start=index + 1)
            return _Inner(script=" ".join(argv[j:])) if j < len(argv) else None
    return None


def _ssh(argv: Sequence[str]) -> _Inner | None:
    """ssh HOST COMMAND…: the remote shell runs the words joined, in a directory not known here."""
    i, _ = getopt(argv, "BbcDEeFIiJLlmOopQRSWw")
    if i + 1 >= len(argv):
        return None
    return _Inner(script=" ".join(argv[i + 1:]), elsewhere=True)


def _multicall(argv: Sequence[str]) -> _Inner | None:
    return _Inner(1) if len(argv) > 1 and not argv[1].startswith("-") else None


def _plain_wrapper(short_values: str = "", long_values: frozenset[str] = frozenset()) -> Callable[[Sequence[str]], _Inner]:
    def unwrap(argv: Sequence[str]) -> _Inner:
        return _Inner(getopt(argv, short_values, long_values)[0])

    return unwrap


WRAPPERS: dict[str, Callable[[Sequence[str]], _Inner | None]] = {
    "sudo": _sudo,
    "doas": _plain_wrapper("uC"),
    "pkexec": _plain_wrapper("", frozenset({"--user"})),
    "env": _env,
    "command": _command_builtin,
    "builtin": lambda argv: _Inner(1),
    "exec": _plain_wrapper("a"),
    "nohup": _plain_wrapper(),
    "setsid": _plain_wrapper(),
    "chronic": _plain_wrapper(),
    "unbuffer": _plain_wrapper(),
    "nice": _plain_wrapper("n", frozenset({"--adjustment"})),
    "ionice": _ionice,
    "time": _plain_wrapper("fo", frozenset({"--format", "--output"})),
    "timeout": _timeout,
    "stdbuf": _plain_wrapper("ioe", frozenset({"--input", "--output", "--error"})),
    "taskset": _taskset,
    "chrt": _chrt,
    "xargs": _xargs,
    "watch": _watch,
    "su": _su,
    "runuser": _runuser,
    "flock": _flock,
    "parallel": _parallel,
    "strace": _tracer("abeEIoOpPsSuUX", frozenset({"--output", "--attach", "--user", "--env", "--signal", "--trace"})),
    "ltrace": _tracer("aAeEnouspSDLlx", frozenset({"--output", "--library"})),
    "valgrind": _tracer(""),
    "catchsegv": _plain_wrapper(),
    "chroot": _after_operands(1, "", frozenset({"--userspec", "--groups"})),
    "unshare": _plain_wrapper("RwSGt", frozenset({"--root", "--wd", "--setuid", "--setgid", "--propagation", "--map-user", "--map-group", "--kill-child", "--setgroups"})),
    "nsenter": _plain_wrapper("tSG", frozenset({"--target", "--setuid", "--setgid", "--root", "--wd", "--mount", "--uts", "--ipc", "--net", "--pid", "--user", "--cgroup", "--time"})),
    "systemd-run": _plain_wrapper("pEuMHdr", frozenset({"--property", "--setenv", "--unit", "--machine", "--host", "--description", "--slice", "--working-directory", "--uid", "--gid", "--nice", "--on-calendar", "--on-active", "--timer-property", "--path-property", "--socket-property"})),
    "firejail": _plain_wrapper(),
    "fakeroot": _plain_wrapper("ls", frozenset({"--lib", "--faked", "-i", "-s"})),
    "fakechroot": _plain_wrapper("lcdse", frozenset({"--lib", "--config-dir", "--environment"})),
    "proot": _plain_wrapper("rbmwuk", frozenset({"--rootfs", "--bind", "--mount", "--pwd", "--cwd", "--kernel-release"})),
    "torsocks": _plain_wrapper("uapP", frozenset({"--user", "--pass", "--address", "--port"})),
    "proxychains": _plain_wrapper("fq"),
    "proxychains4": _plain_wrapper("fq"),
    "numactl": _plain_wrapper("CNmpPiw", frozenset({"--cpunodebind", "--physcpubind", "--membind", "--preferred", "--interleave"})),
    "prlimit": _tracer("p", frozenset({"--pid", "--output"})),
    "cgexec": _plain_wrapper("g"),
    "xvfb-run": _plain_wrapper("nsfpe", frozenset({"--server-num", "--server-args", "--auth-file", "--error-file"})),
    "dbus-run-session": _plain_wrapper("", frozenset({"--config-file", "--dbus-daemon"})),
    "dbus-launch": _plain_wrapper(),
    "faketime": _after_operands(1, "f"),
    "setarch": _after_operands(1),
    "linux32": _plain_wrapper(),
    "linux64": _plain_wrapper(),
    "sg": _sg,
    "script": _script,
    "ip": _ip,
    "capsh": _capsh,
    "tmux": _terminal_multiplexer,
    "screen": _terminal_multiplexer,
    "ssh": _ssh,
    "caffeinate": _plain_wrapper("tw"),
    "daemonize": _plain_wrapper("acepEloPu"),
    "busybox": _multicall,
    "toybox": _multicall,
}


def scripts_run_by(argv: Sequence[str]) -> list[str]:
    """Shell scripts a command runs from its own arguments (`bash -c`, `eval`, `trap`, …)."""
    name = argv[0]
    if name in SHELLS:
        kind, code = program_source(argv)
        return [code] if kind == "code" and code else []
    if name == "eval":
        return [" ".join(argv[1:])] if len(argv) > 1 else []
    if name == "trap":
        args = list(argv[1:])
        if args[:1] == ["--"]:
            args = args[1:]
        return [args[0]] if len(args) >= 2 and not args[0].startswith("-") else []
    if name == "alias":
        return [arg.split("=", 1)[1] for arg in argv[1:] if "=" in arg]
    return []


def shell_reads_stdin(command: SimpleCommand) -> bool:
    """A shell (not another interpreter) that reads its script from standard input."""
    return command.name in SHELLS and program_source(command.argv)[0] == "stdin"
