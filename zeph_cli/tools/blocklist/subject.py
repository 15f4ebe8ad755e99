"""What the permission rules see of a shell command: every simple command it
could run, written out whole, and the files it writes outside the workspace.

Invariant: a part carries its `NAME=value` prefixes and its redirections, so an
allow rule like `bash:ls*` never covers `FOO=bar ls` and covers `ls > file`
only if the rule itself names a redirection; a write whose target lies outside
the workspace, or is only known at run time, is listed in `outside_writes`. The
only I/O is resolving paths (`realpath`).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from pathlib import Path

from ..permissions import ToolCallSubject
from ..shell_syntax import SimpleCommand, parse_command
from .commands import changed_paths, written_paths
from .paths import Where

_NOT_A_FILE = re.compile(r"/dev/(null|zero|full|stdout|stderr|stdin|tty|fd/[0-9]+|pts/[0-9]+)$")
_FD_DUPLICATION = re.compile(r"[0-9]*-?|-")


def shell_subject(command: str, *, cwd: Path, workspace: Sequence[Path], home: Path) -> ToolCallSubject:
    """The subject the permission policy judges for one `bash` call."""
    parsed = parse_command(command)
    where = Where.of(cwd, workspace, home)
    parts: list[str] = []
    redirecting: set[str] = set()
    outside: list[str] = []
    for simple in parsed.commands:
        if not simple.argv and not simple.redirects:
            continue
        text = render(simple)
        parts.append(text)
        if _writes_a_file(simple):
            redirecting.add(text)
        outside += _outside_writes(simple, where)
    return ToolCallSubject(
        command,
        tuple(dict.fromkeys(parts)) or (command,),
        parsed.complete and not parsed.unverifiable,
        redirecting=frozenset(redirecting),
        outside_writes=tuple(dict.fromkeys(outside)),
        bare_parts=tuple(dict.fromkeys(" ".join(c.argv) for c in parsed.commands if c.argv)),
    )


def render(command: SimpleCommand) -> str:
    """`NAME=value … argv … op target …`: the simple command as a rule must match it."""
    words = [f"{name}={'$…' if value is None else value}" for name, value in command.assignments]
    words += command.argv
    words += [f"{op}{target}" if op.endswith("&") else f"{op} {target}" for op, target in command.redirects if op not in ("<<", "<<-", "<<<")]
    return " ".join(words)


def _writes_a_file(command: SimpleCommand) -> bool:
    for op, target in command.redirects:
        bare = op.lstrip("0123456789")
        if bare in (">&", "&>") and _FD_DUPLICATION.fullmatch(target):
            continue
        if bare in (">", ">>", ">|", "&>", "&>>", "<>", ">&") and not _NOT_A_FILE.match(target):
            return True
    return False


def _outside_writes(command: SimpleCommand, where: Where) -> list[str]:
    found = []
    for word, _how in written_paths(command) + changed_paths(command):
        if _NOT_A_FILE.match(word):
            continue
        resolved = where.locate(word, command, follow_last=False)
        if resolved is None or not where.inside(resolved):
            found.append(word)
    return found
