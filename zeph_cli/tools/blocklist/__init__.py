"""Commands the `bash` tool refuses to run, whatever the user approved.

Invariant: every simple command `parse_command` finds — nested, wrapped or
disguised — is judged by built-in rules that cannot be switched off, then by
the user's extra patterns; what cannot be verified (a deletion target only
known at run time, input too deeply nested, text the shell parser cannot
read) is refused, never guessed. The
only I/O is resolving paths (`realpath`, glob matches); nothing is run.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from ..shell_syntax import parse_command
from .patterns import compile_patterns, pattern_reason
from .paths import Where
from .rules import COMMAND_RULES, SCRIPT_RULES, builtin_reason
from .subject import shell_subject

__all__ = ["COMMAND_RULES", "SCRIPT_RULES", "blocked_reason", "compile_patterns", "shell_subject"]


def blocked_reason(
    command: str,
    *,
    cwd: Path,
    workspace: Sequence[Path],
    home: Path,
    extra_patterns: Sequence[str] = (),
) -> str | None:
    """One sentence saying why `command` must never run, or None.

    `workspace` lists the allowed roots, the workspace root first. Built-in
    rules come first; `extra_patterns` (regular expressions) are searched in
    the raw command and in each simple command's text and joined argv.
    """
    patterns = compile_patterns(extra_patterns)
    where = Where.of(cwd, workspace, home)
    parsed = parse_command(command)
    reason = builtin_reason(parsed, where)
    if reason is not None:
        return reason
    return pattern_reason(command, parsed, patterns)
