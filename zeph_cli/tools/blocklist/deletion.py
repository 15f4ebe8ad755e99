"""Recursive deletion: rm -r, find -delete or -exec rm, find | xargs rm, rsync --delete.

Invariant: a tree target is refused when it is /, a system directory, the home
directory, the workspace root or lies outside the workspace, and when it is
only known at run time; glob targets are judged by every path they match now.
"""

from __future__ import annotations

import glob
import itertools
from collections.abc import Sequence
from pathlib import Path

from ..shell_syntax import ParsedCommand, SimpleCommand, operands, split_find
from .commands import tool_name, verb_with_flags
from .paths import FS_ROOT, Where, glob_prefix, real

_MAX_GLOB_MATCHES = 2000


def _tree_problem(label: str, resolved: Path, where: Where, *, contents: bool, what: str) -> str | None:
    """Why a recursive `what` ("deletion", "chmod", …) of `resolved` (or only of its
    entries, with `contents`) must be refused; None when it stays inside the workspace."""
    if resolved == FS_ROOT:
        return f"recursive {what} of / is blocked"
    if resolved == where.home:
        return f"recursive {what} of the home directory {where.home} is blocked"
    if _system_directory(resolved, where) and not (contents and resolved in where.roots):
        return f"recursive {what} of the system directory {resolved} is blocked"
    if not contents and where.home.is_relative_to(resolved):
        return f"recursive {what} of {resolved}, which contains the home directory, is blocked"
    if not contents and what == "deletion" and where.root.is_relative_to(resolved):
        return f"{label} would delete the workspace root {where.root}: blocked"
    if not where.inside(resolved):
        return f"{label} resolves to {resolved}, {where.outside_text()}: blocked"
    return None


_SYSTEM_NAMES = frozenset({
    "bin", "boot", "dev", "etc", "home", "lib", "lib32", "lib64", "libx32", "media", "mnt", "nix", "opt", "proc",
    "root", "run", "sbin", "snap", "srv", "sys", "tmp", "usr", "var",
    "Applications", "Library", "System", "Users", "Volumes", "private", "cores",
})


def _system_directory(path: Path, where: Where) -> bool:
    """A directory right below / that is the system's, or that lies outside the workspace."""
    return path.parent == FS_ROOT and (path.name in _SYSTEM_NAMES or not where.inside(path))


def target_problem(
    label: str, word: str, command: SimpleCommand, where: Where, *, contents: bool = False, what: str = "deletion"
) -> str | None:
    """Judge one recursive target as written (`~/x`, `../*`, `$DIR`) where `command` runs."""
    base = where.base(command)
    path = where.expand(word, base)
    if path is None:
        unknown = "the directory it runs in" if base is None and not _looks_absolute(word) else word
        effect = "deletes" if what == "deletion" else "changes"
        return f"{label} is blocked: cannot verify what it {effect} ({unknown} is only known when it runs)"
    prefix, is_glob = glob_prefix(path)
    follow = contents or is_glob or what != "deletion"
    resolved = real(prefix, follow_last=follow)
    if resolved is None:
        return f"{label} is blocked: cannot resolve {word}"
    problem = _tree_problem(label, resolved, where, contents=contents or is_glob, what=what)
    if problem is None and is_glob and what == "deletion":
        problem = _glob_matches_problem(label, path, where)
    return problem


def _glob_matches_problem(label: str, pattern: str, where: Where) -> str | None:
    """Each path a glob matches now, judged as rm would see it (a trailing `/` follows a symlink)."""
    try:
        for match in itertools.islice(glob.iglob(pattern), _MAX_GLOB_MATCHES):
            resolved = real(match, follow_last=match.endswith("/"))
            if resolved is not None:
                problem = _tree_problem(label, resolved, where, contents=False, what="deletion")
                if problem is not None:
                    return problem
    except (OSError, ValueError, RecursionError):
        return None
    return None


def _looks_absolute(word: str) -> bool:
    return word.startswith(("/", "~", "$HOME", "${HOME}"))


def _rm_arguments(argv: Sequence[str]) -> tuple[bool, list[str]]:
    """(recursive?, targets) for rm, flags in any position and form."""
    recursive = False
    targets: list[str] = []
    options_done = False
    for arg in argv[1:]:
        if options_done or arg == "-" or not arg.startswith("-"):
            targets.append(arg)
        elif arg == "--":
            options_done = True
        elif arg.startswith("--"):
            name = arg.split("=", 1)[0]
            if len(name) > 2 and "--recursive".startswith(name):
                recursive = True
        elif "r" in arg or "R" in arg:
            recursive = True
    return recursive, targets


def _rm_problem(command: SimpleCommand, where: Where) -> str | None:
    recursive, targets = _rm_arguments(command.argv)
    if not recursive:
        return None
    verb = verb_with_flags(command)
    if command.from_xargs:
        return f"{verb} with targets from xargs is blocked: cannot verify what it deletes"
    for word in targets:
        if not word or (command.find_roots and "{}" in word):
            continue
        problem = target_problem(f"{verb} {word}", word, command, where)
        if problem is not None:
            return problem
    return None


def no_preserve_root(command: SimpleCommand, where: Where) -> str | None:
    """`--no-preserve-root` switches off the last guard against deleting or re-owning /."""
    name = tool_name(command)
    for arg in command.argv[1:]:
        if arg == "--no-preserve-root" or (
            name in ("rm", "chmod", "chown", "chgrp")
            and len(arg) >= (3 if name == "rm" else 6)
            and "--no-preserve-root".startswith(arg)
        ):
            return f"{command.argv[0]} --no-preserve-root is blocked"
    return None


def recursive_rm(command: SimpleCommand, where: Where) -> str | None:
    """rm -r of /, a system directory, the home directory, anything outside the
    workspace, the workspace root itself, or of a target only known at run time."""
    return _rm_problem(command, where) if tool_name(command) == "rm" else None


def rm_behind_unknown_name(command: SimpleCommand, where: Where) -> str | None:
    """A command whose name is only known at run time (`$X -rf /`) is judged as if it were rm."""
    program = command.argv[0] if command.argv else ""
    if not any(marker in program for marker in ("$", "`")):
        return None
    problem = _rm_problem(command, where)
    if problem is None:
        return None
    return f"{program} is only known when it runs, and as rm: {problem}"


def find_delete(command: SimpleCommand, where: Where) -> str | None:
    """find … -delete removes everything it matches below its starting points."""
    if tool_name(command) != "find":
        return None
    starts, expression, _ = split_find(command.argv)
    if "-delete" not in expression:
        return None
    for start in starts:
        problem = target_problem(f"find {start} -delete", start, command, where, contents=True)
        if problem is not None:
            return problem
    return None


_FIND_CHANGERS = frozenset({"rm", "unlink", "shred", "chmod", "chown", "chgrp", "mv", "truncate", "dd"})


def find_exec_delete(command: SimpleCommand, where: Where) -> str | None:
    """find … -exec rm {} (or chmod, chown, mv, truncate, …) changes every path find yields
    below its starting points."""
    name = tool_name(command)
    if not command.find_roots or name not in _FIND_CHANGERS:
        return None
    if not any("{}" in arg for arg in command.argv[1:]):
        return None
    what = "deletion" if name in ("rm", "unlink", "shred") else name
    for start in command.find_roots:
        label = f"find {start} -exec {verb_with_flags(command)}"
        problem = target_problem(label, start, command, where, contents=True, what=what)
        if problem is not None:
            return problem
    return None


_RSYNC_VALUES = frozenset({"--rsh", "--filter", "--exclude", "--include", "--temp-dir", "--block-size"})


def mirror_deletion(command: SimpleCommand, where: Where) -> str | None:
    """rsync --delete into /, a system directory, the home directory or a parent of the
    workspace deletes whatever the source lacks."""
    if tool_name(command) != "rsync" or not any(a.startswith("--del") for a in command.argv[1:]):
        return None
    found = operands(command.argv, "efBTM", _RSYNC_VALUES)
    if len(found) < 2:
        return None
    destination = found[-1]
    if destination.startswith("rsync://") or ":" in destination.split("/", 1)[0]:
        return None
    resolved = where.locate(destination, command)
    if resolved is None:
        return None
    if resolved in (FS_ROOT, where.home) or resolved.parent == FS_ROOT or (
        where.root.is_relative_to(resolved) and resolved != where.root
    ):
        return f"rsync --delete into {resolved} is blocked"
    return None


def xargs_deletion_fed_by_find(parsed: ParsedCommand, where: Where) -> str | None:
    """find … | xargs rm deletes what find yields, like find -delete."""
    for pipeline in parsed.pipelines:
        finds = [c for c in pipeline if tool_name(c) == "find"]
        deleters = [c for c in pipeline if c.from_xargs and tool_name(c) in ("rm", "unlink", "shred")]
        if not finds or not deleters:
            continue
        starts, _, _ = split_find(finds[0].argv)
        for start in starts:
            problem = target_problem(f"find {start} | xargs {verb_with_flags(deleters[0])}", start, finds[0], where, contents=True)
            if problem is not None:
                return problem
    return None
