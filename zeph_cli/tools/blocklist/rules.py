"""The built-in rules, in the order they are tried, and how they are applied.

Invariant: every simple command meets every command rule, then the whole
command line every script rule; the first reason found wins. Interpreter code
that hands commands to a shell is judged by these same rules, so it lives here.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace

from ..shell_syntax import ParsedCommand, SimpleCommand, interpreter_family, parse_command, program_source
from .commands import tool_name
from .deletion import (
    find_delete,
    find_exec_delete,
    mirror_deletion,
    no_preserve_root,
    recursive_rm,
    rm_behind_unknown_name,
    target_problem,
    xargs_deletion_fed_by_find,
)
from .devices import device_writes, disk_tools
from .interpreter_code import Call, fork_loop, removals, shell_calls
from .downloads import download_piped_to_interpreter, downloaded_code
from .paths import Where
from .system import crontab_removal, fork_bomb, kill_everything, power, system_file_changes
from .tree_changes import moving_essential_directories, recursive_permissions
from .unknown_code import unknown_code, unknown_command_words

_MAX_NESTED_CHECKS = 2


Rule = Callable[[SimpleCommand, Where], "str | None"]
ScriptRule = Callable[[ParsedCommand, Where], "str | None"]


def builtin_reason(parsed: ParsedCommand, where: Where) -> str | None:
    for command in parsed.commands:
        for rule in COMMAND_RULES:
            reason = rule(command, where)
            if reason is not None:
                return reason
    for script_rule in SCRIPT_RULES:
        reason = script_rule(parsed, where)
        if reason is not None:
            return reason
    return None


def shell_in_interpreter_code(command: SimpleCommand, where: Where) -> str | None:
    """python -c / perl -e / node -e code that hands a blocked command (or one only known
    when it runs) to the shell, removes files or trees it may not, or forks without end."""
    family = interpreter_family(tool_name(command))
    if family is None or where.nesting >= _MAX_NESTED_CHECKS:
        return None
    kind, code = program_source(command.argv)
    if kind != "code" or not code:
        return None
    if fork_loop(code):
        return f"{command.argv[0]} code that forks in an endless loop (a fork bomb) is blocked"
    for call, tree in removals(code):
        reason = _removal_problem(command, where, family, call, tree)
        if reason is not None:
            return reason
    nested = replace(where, nesting=where.nesting + 1)
    for call in shell_calls(code, backticks=family in ("perl", "ruby", "php")):
        if not call.known:
            return f"{command.argv[0]} code runs a command only known when it runs ({call.name}): blocked, cannot verify what it runs"
        if call.literals:
            reason = builtin_reason(parse_command(" ".join(call.literals)), nested)
            if reason is not None:
                return f"{command.argv[0]} code runs a shell command: {reason}"
    return None


def _removal_problem(command: SimpleCommand, where: Where, family: str, call: Call, tree: bool) -> str | None:
    if not call.known or not call.literals:
        return f"{family} code removing files with {call.name}() is blocked: cannot verify what it deletes"
    for target in call.literals:
        label = f"{family} removing {target}"
        if tree:
            problem = target_problem(label, target, command, where)
        else:
            resolved = where.locate(target, command, follow_last=False)
            problem = None if resolved is not None and where.inside(resolved) else (
                f"{label} is blocked: it lies {where.outside_text()}" if resolved is not None
                else f"{label} is blocked: cannot verify what it deletes"
            )
        if problem is not None:
            return problem
    return None


def unverifiable(parsed: ParsedCommand, where: Where) -> str | None:
    """Input too deeply nested or too large to analyse is refused rather than guessed."""
    if parsed.unverifiable:
        return f"this command cannot be checked ({parsed.unverifiable[0]}), so it is blocked"
    return None


COMMAND_RULES: tuple[Rule, ...] = (
    no_preserve_root,
    recursive_rm,
    rm_behind_unknown_name,
    find_delete,
    find_exec_delete,
    disk_tools,
    device_writes,
    system_file_changes,
    power,
    kill_everything,
    recursive_permissions,
    moving_essential_directories,
    crontab_removal,
    mirror_deletion,
    downloaded_code,
    shell_in_interpreter_code,
)


SCRIPT_RULES: tuple[ScriptRule, ...] = (
    fork_bomb,
    download_piped_to_interpreter,
    xargs_deletion_fed_by_find,
    unknown_code,
    unknown_command_words,
    unverifiable,
)
