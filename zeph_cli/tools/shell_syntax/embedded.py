"""Commands that programs run from their own options, settings and environment:
`git -c core.pager=…`, `GIT_SSH_COMMAND=…`, `tar --checkpoint-action=exec=…`,
`ssh -o ProxyCommand=…`, `vim -c ':!…'`, `make --eval`, awk's `system()`.

Invariant: pure; each command found is an `Embedded` naming where it came from,
with its shell text, or with None when the text is only known at run time (the
caller then reports it as code it cannot check, never as harmless).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from .argv import basename, getopt
from .programs import SHELLS


@dataclass(frozen=True)
class Embedded:
    what: str  # where the command comes from, for a message ("git -c core.pager")
    script: str | None  # the shell text it runs; None when only known at run time


# Variables whose value a program runs as a command (through a shell, or as a program path).
COMMAND_VARIABLES = frozenset({
    "GIT_EXTERNAL_DIFF", "GIT_SSH_COMMAND", "GIT_SSH", "GIT_PAGER", "GIT_EDITOR", "GIT_SEQUENCE_EDITOR",
    "GIT_ASKPASS", "SSH_ASKPASS", "GIT_PROXY_COMMAND", "GIT_EXEC_PATH", "PAGER", "MANPAGER", "EDITOR", "VISUAL",
    "SUDO_ASKPASS", "BROWSER", "LESSOPEN", "LESSCLOSE", "PROMPT_COMMAND", "BASH_ENV", "ENV", "SYSTEMD_PAGER",
    "GIT_CONFIG_PARAMETERS", "RSYNC_RSH", "CVS_RSH", "FCEDIT", "DIFF_PAGER",
})

# git configuration keys whose value is a command; `alias.*` and `credential.helper` only with a leading `!`.
_GIT_COMMAND_KEYS = re.compile(
    r"core\.(pager|sshcommand|editor|askpass|fsmonitor|gitproxy)|diff\.external|sequence\.editor"
    r"|gpg(\.[^.]+)?\.program|pager\..+|web\.browser|browser\..+\.(cmd|path)|man\..+\.(cmd|path)"
    r"|diff\..+\.(textconv|command)|merge\..+\.driver|filter\..+\.(clean|smudge|process)"
    r"|uploadpack\.packobjectshook|remote\..+\.(uploadpack|receivepack|proxy)|http\.proxy|include(if\..+)?\.path"
    r"|difftool\..+\.cmd|mergetool\..+\.cmd|sendemail\..*(smtpserver|tocmd|cccmd)|core\.(editor|pager)"
    r"|credential(\..+)?\.helper|alias\..+",
    re.I,
)
_BANG_ONLY = re.compile(r"alias\..+|credential(\..+)?\.helper", re.I)
# git subcommands that take a shell command in an option or operand.
_GIT_SCRIPT_OPTIONS = {
    "rebase": ("-x", "--exec"),
    "filter-branch": ("--tree-filter", "--index-filter", "--msg-filter", "--commit-filter", "--env-filter",
                      "--parent-filter", "--tag-name-filter"),
    "clone": ("-u", "--upload-pack"),
    "fetch": ("--upload-pack",),
    "pull": ("--upload-pack",),
    "ls-remote": ("--upload-pack",),
    "push": ("--receive-pack", "--exec"),
    "difftool": ("-x", "--extcmd"),
    "archive": ("--exec",),
}
_GIT_GLOBAL_VALUES = frozenset({"-C", "-c", "--git-dir", "--work-tree", "--namespace", "--config-env", "--exec-path"})


def _git(argv: Sequence[str]) -> list[Embedded]:
    found: list[Embedded] = []
    i, n = 1, len(argv)
    while i < n and argv[i].startswith("-"):
        arg = argv[i]
        name, eq, value = arg.partition("=")
        if name in ("-c", "--config-env") and not eq:
            value = argv[i + 1] if i + 1 < n else ""
            i += 1
        elif name.startswith("-c") and len(name) > 2:
            name, value = "-c", arg[2:]
        if name == "-c":
            found += _git_setting(value)
        elif name == "--config-env":
            key = value.partition("=")[0]
            if _GIT_COMMAND_KEYS.fullmatch(key):
                found.append(Embedded(f"git --config-env {key}", None))
        elif name == "--exec-path" and eq:
            found.append(Embedded("git --exec-path", None))
        elif name in _GIT_GLOBAL_VALUES and not eq:
            i += 1
        i += 1
    sub = argv[i] if i < n else ""
    rest = list(argv[i + 1:])
    found += [Embedded("git's ext:: transport", None) for a in rest if a.startswith("ext::")]
    for option in _GIT_SCRIPT_OPTIONS.get(sub, ()):
        for value in _option_values(rest, option):
            found.append(Embedded(f"git {sub} {option}", value))
    if sub == "bisect" and rest[:1] == ["run"] and len(rest) > 1:
        found.append(Embedded("git bisect run", " ".join(rest[1:])))
    if sub == "submodule" and "foreach" in rest:
        words = [a for a in rest[rest.index("foreach") + 1:] if not a.startswith("--")]
        if words:
            found.append(Embedded("git submodule foreach", " ".join(words)))
    return found


def _git_setting(setting: str) -> list[Embedded]:
    key, _, value = setting.partition("=")
    if not _GIT_COMMAND_KEYS.fullmatch(key):
        return []
    if _BANG_ONLY.fullmatch(key):
        if not value.startswith("!"):
            return []
        value = value[1:]
    return [Embedded(f"git -c {key}", value)]


def _option_values(args: Sequence[str], option: str) -> list[str]:
    """Every value of `option` in `args`: `--opt=v`, `--opt v`, `-xv`, `-x v`."""
    found: list[str] = []
    for index, arg in enumerate(args):
        if arg == option:
            found.append(args[index + 1] if index + 1 < len(args) else "")
        elif option.startswith("--") and arg.startswith(option + "="):
            found.append(arg[len(option) + 1:])
        elif not option.startswith("--") and arg.startswith(option) and not arg.startswith("--"):
            found.append(arg[len(option):])
    return found


_TAR_SCRIPT_OPTIONS = ("--to-command", "--use-compress-program", "--info-script", "--new-volume-script",
                       "--rsh-command", "-I", "-F")


def _tar(argv: Sequence[str]) -> list[Embedded]:
    found = []
    args = list(argv[1:])
    for option in _TAR_SCRIPT_OPTIONS:
        for value in _option_values(args, option):
            found.append(Embedded(f"tar {option}", value))
    for value in _option_values(args, "--checkpoint-action"):
        if value.startswith("exec="):
            found.append(Embedded("tar --checkpoint-action=exec", value[5:]))
    return found


def _ssh(argv: Sequence[str]) -> list[Embedded]:
    found = []
    for value in _option_values(list(argv[1:]), "-o"):
        key, command = (re.split(r"\s*=\s*|\s+", value.strip(), maxsplit=1) + [""])[:2]
        if key.lower() in ("proxycommand", "localcommand", "knownhostscommand", "match"):
            found.append(Embedded(f"ssh -o {key}", command))
    return found


_VIM_SHELL = re.compile(r"^[:\s]*(?:[0-9,.$%]*\s*)?(?:r(?:ead)?\s*|w(?:rite)?\s*|)!(.*)$", re.S)
_VIM_OPAQUE = re.compile(r"system\s*\(|\bterm(inal)?\b|\bpy(thon)?3?\b|\blua\b|\bperl\b|\bruby\b|\bsource\b|\bso\b|\bexe(cute)?\b")


def _vim(argv: Sequence[str]) -> list[Embedded]:
    found = []
    args = list(argv[1:])
    commands = _option_values(args, "-c") + _option_values(args, "--cmd")
    commands += [a[1:] for a in args if a.startswith("+") and len(a) > 1]
    for command in commands:
        for part in command.split("|") if not _VIM_SHELL.match(command) else [command]:
            shell = _VIM_SHELL.match(part)
            if shell:
                found.append(Embedded("a vim command", shell.group(1)))
            elif _VIM_OPAQUE.search(part):
                found.append(Embedded(f"the vim command {part.strip()!r}", None))
    return found


def _make(argv: Sequence[str]) -> list[Embedded]:
    found = []
    args = list(argv[1:])
    for text in _option_values(args, "--eval") + _option_values(args, "-E"):
        found += recipes(text, "make --eval")
    return found


def recipes(makefile: str, what: str) -> list[Embedded]:
    """The shell commands of a makefile's text: recipe lines (tab first) and `$(shell …)` calls."""
    found = [Embedded(what, line[1:].lstrip("@-+")) for line in makefile.splitlines() if line.startswith("\t")]
    found += [Embedded(what, m.group(1)) for m in re.finditer(r"\$\(shell ([^)]*)\)", makefile)]
    return found


_AWKS = frozenset({"awk", "gawk", "mawk", "nawk", "busybox-awk"})
_STRING = r'"((?:\\.|[^"\\])*)"'
_AWK_SYSTEM = re.compile(r"\bsystem\s*\(\s*(" + _STRING + r"\s*)?([^)]*)\)")
_AWK_PIPE_TO = re.compile(r"\|&?\s*(" + _STRING + r"|[A-Za-z_]\w*)")
_AWK_PIPE_FROM = re.compile(r"(" + _STRING + r"|[A-Za-z_]\w*)\s*\|&?\s*getline")


def awk_program(argv: Sequence[str]) -> str | None:
    """The program text an awk command runs (its first operand, or `-e`/`--source`)."""
    i, options = getopt(argv, "FvfeWi", {"--field-separator", "--assign", "--file", "--source", "--include"})
    sources = [value or "" for option, value in options if option in ("-e", "--source")]
    if sources:
        return "\n".join(sources)
    if any(option in ("-f", "--file") for option, _ in options):
        return None
    return argv[i] if i < len(argv) else None


def _awk(argv: Sequence[str]) -> list[Embedded]:
    program = awk_program(argv)
    if not program:
        return []
    found = []
    for match in _AWK_SYSTEM.finditer(program):
        literal, rest = match.group(2), match.group(3).strip()
        found.append(Embedded("awk system()", literal.replace('\\"', '"') if literal is not None and not rest else None))
    for pattern, what in ((_AWK_PIPE_TO, "awk's print | command"), (_AWK_PIPE_FROM, "awk's command | getline")):
        for match in pattern.finditer(program):
            literal = match.group(2)
            if literal is None or (what.endswith("command") and basename(literal.split(" ", 1)[0]) in SHELLS):
                found.append(Embedded(what, None))
            else:
                found.append(Embedded(what, literal.replace('\\"', '"')))
    return found


def embedded_commands(argv: Sequence[str]) -> list[Embedded]:
    """Shell commands `argv` runs from its own options or program text (not its wrapped command)."""
    if not argv:
        return []
    name = basename(argv[0])
    if name == "git":
        return _git(argv)
    if name in ("tar", "gtar", "bsdtar"):
        return _tar(argv)
    if name in ("ssh", "scp", "sftp", "rsync"):
        return _ssh(argv) if name != "rsync" else [Embedded("rsync -e", v) for v in _option_values(list(argv[1:]), "-e") + _option_values(list(argv[1:]), "--rsh")]
    if name in ("vim", "vi", "nvim", "ex", "view", "gvim", "rvim", "vimdiff"):
        return _vim(argv)
    if name in ("make", "gmake"):
        return _make(argv)
    if name in _AWKS:
        return _awk(argv)
    return []


def variable_command(name: str, value: str | None) -> Embedded | None:
    """The command a `NAME=value` assignment hands a program (`GIT_PAGER='…'`), if NAME is such a variable."""
    if name not in COMMAND_VARIABLES:
        return None
    return Embedded(f"the variable {name}", value)
