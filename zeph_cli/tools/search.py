"""The search tools: find_path (paths by glob) and grep (lines by regex).

Invariant: a walk stays inside the directory it starts from — directory
symlinks are never followed and a file symlink is read only when its target is
allowed by the `Confinement` — skips `.git`, heavy tool directories and what
`.gitignore` files exclude, and visits entries in sorted order, so the same tree
always gives the same results.
"""

from __future__ import annotations

import asyncio
import os
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .base import Tool, ToolContext, ToolResult
from .failures import ToolFailure
from .text_files import SNIFF_BYTES, binary_kind, missing, os_failure, plural, refuse_binary, resolve, shown

ALWAYS_SKIPPED = frozenset(
    {".git", "node_modules", ".venv", "venv", "__pycache__", ".mypy_cache", ".pytest_cache", ".tox", ".ruff_cache"}
)
MAX_PATHS = 500
MAX_MATCHES = 200
MAX_MATCH_LINE_CHARS = 300
MAX_GREP_FILE_BYTES = 5 * 1024 * 1024


# ---- walking the tree --------------------------------------------------------


@dataclass(frozen=True)
class IgnoreRules:
    """The .gitignore patterns in force, rewritten relative to the walk's base directory."""

    lines: tuple[str, ...] = ()
    spec: Any = field(default=None, compare=False)

    def with_file(self, gitignore: Path, directory: str) -> IgnoreRules:
        """These rules plus those of `gitignore`, which lies in `directory` (relative to the base)."""
        try:
            text = gitignore.read_text(encoding="utf-8", errors="replace")
        except OSError:
            return self
        added = tuple(p for p in (rebase_pattern(line, directory) for line in text.splitlines()) if p)
        if not added:
            return self
        lines = self.lines + added
        import pathspec  # only when a search reads ignore files

        return IgnoreRules(lines, pathspec.GitIgnoreSpec.from_lines(lines))

    def ignores(self, relative: str, is_dir: bool) -> bool:
        return self.spec is not None and self.spec.match_file(relative + "/" if is_dir else relative)


def rebase_pattern(line: str, directory: str) -> str | None:
    """A .gitignore line from `directory` as a pattern relative to the base (None for blanks and comments)."""
    line = line.rstrip("\r")
    if not line.strip() or line.startswith("#"):
        return None
    if not directory:
        return line
    negate = line.startswith("!")
    body = line[1:] if negate else line
    anchored = "/" in body.rstrip("/")
    body = f"{directory}/{body.lstrip('/')}" if anchored else f"{directory}/**/{body}"
    return ("!" if negate else "") + body


@dataclass(frozen=True)
class Entry:
    path: Path  # base / relative: symlinks are not resolved
    relative: str  # POSIX path relative to the walk's base
    is_dir: bool  # a real directory, not a symlink to one
    is_symlink: bool


def walk(base: Path, top: Path | None = None) -> Iterator[Entry]:
    """Every entry under `top` (default `base`) depth first in sorted order, relative to `base`."""
    top = top or base
    start = "" if top == base else top.relative_to(base).as_posix()
    stack = [_directory_entries(top, start, _rules_above(base, start))]
    while stack:
        item = next(stack[-1], None)
        if item is None:
            stack.pop()
            continue
        entry, rules = item
        yield entry
        if entry.is_dir:
            stack.append(_directory_entries(entry.path, entry.relative, rules))


def _rules_above(base: Path, start: str) -> IgnoreRules:
    """The rules of `.git/info/exclude` and of every .gitignore from `base` down to `start`'s parent."""
    rules = IgnoreRules()
    exclude = base / ".git" / "info" / "exclude"
    if os.path.isfile(exclude):
        rules = rules.with_file(exclude, "")
    parts = start.split("/") if start else []
    for depth in range(len(parts)):
        relative = "/".join(parts[:depth])
        gitignore = base / relative / ".gitignore"
        if os.path.isfile(gitignore):
            rules = rules.with_file(gitignore, relative)
    return rules


def _directory_entries(directory: Path, relative: str, rules: IgnoreRules) -> Iterator[tuple[Entry, IgnoreRules]]:
    """The kept entries of one directory, each with the rules that apply below it."""
    gitignore = directory / ".gitignore"
    if os.path.isfile(gitignore):
        rules = rules.with_file(gitignore, relative)
    try:
        with os.scandir(directory) as listing:
            entries = sorted(listing, key=lambda e: e.name)
    except OSError:
        return
    for entry in entries:
        child = f"{relative}/{entry.name}" if relative else entry.name
        is_symlink = entry.is_symlink()
        is_dir = not is_symlink and _is_dir(entry)
        if entry.name == ".git" or (is_dir and entry.name in ALWAYS_SKIPPED) or rules.ignores(child, is_dir):
            continue
        yield Entry(Path(entry.path), child, is_dir, is_symlink), rules


def _is_dir(entry: os.DirEntry[str]) -> bool:
    try:
        return entry.is_dir(follow_symlinks=False)
    except OSError:
        return False


# ---- globs -------------------------------------------------------------------


PathMatcher = Callable[[str, bool], bool]


def glob_matcher(pattern: str) -> PathMatcher:
    """A test of (relative path, is directory) against a glob.

    Without "/" the glob matches names at any depth (`*.py`); with "/" it matches
    the whole relative path, `**` standing for any number of directories
    (`src/**/*.ts`). A trailing "/" matches directories only; `{a,b}` is either.
    """
    text = pattern.strip()
    if text.startswith("./"):
        text = text[2:]
    directories_only = text.endswith("/")
    text = text.strip("/")
    if not text:
        raise ToolFailure(f"the glob {pattern!r} names nothing; use a pattern such as *.py or src/**/*.ts")
    regex = re.compile(glob_to_regex(text) + r"\Z", re.DOTALL)
    by_name = "/" not in text

    def matches(relative: str, is_dir: bool) -> bool:
        if directories_only and not is_dir:
            return False
        subject = relative.rsplit("/", 1)[-1] if by_name else relative
        return regex.match(subject) is not None

    return matches


def glob_to_regex(glob: str) -> str:
    out: list[str] = []
    i = 0
    while i < len(glob):
        if glob.startswith("**/", i):
            out.append("(?:.*/)?")
            i += 3
        elif glob.startswith("**", i):
            out.append(".*")
            i += 2
        elif glob[i] == "*":
            out.append("[^/]*")
            i += 1
        elif glob[i] == "?":
            out.append("[^/]")
            i += 1
        elif glob[i] == "[" and (end := _class_end(glob, i)) != -1:
            body = glob[i + 1 : end]
            negate = body[:1] in ("!", "^")
            body = body[1:] if negate else body
            out.append("[" + ("^" if negate else "") + body.replace("\\", "\\\\") + "]")
            i = end + 1
        elif glob[i] == "{" and (end := glob.find("}", i)) != -1 and "," in glob[i:end]:
            options = glob[i + 1 : end].split(",")
            out.append("(?:" + "|".join(glob_to_regex(option) for option in options) + ")")
            i = end + 1
        elif glob[i] == "\\" and i + 1 < len(glob):
            out.append(re.escape(glob[i + 1]))
            i += 2
        else:
            out.append(re.escape(glob[i]))
            i += 1
    return "".join(out)


def _class_end(glob: str, start: int) -> int:
    """Where the `[...]` class opened at `start` closes, or -1."""
    i = start + 1
    if glob[i : i + 1] in ("!", "^"):
        i += 1
    if glob[i : i + 1] == "]":
        i += 1
    return glob.find("]", i)


# ---- find_path ---------------------------------------------------------------


class FindPathTool(Tool, declared="find_path"):
    async def run(self, arguments: dict[str, Any], context: ToolContext) -> ToolResult:
        return await asyncio.to_thread(find_path, arguments, context)


def find_path(arguments: dict[str, Any], context: ToolContext) -> ToolResult:
    pattern = arguments["pattern"]
    matches = glob_matcher(pattern)
    found: list[str] = []
    more = 0
    root = context.confinement.root
    top = Path(os.path.realpath(context.cwd))
    if not (top == root or top.is_relative_to(root)):
        top = root
    for entry in walk(root, top):
        relative = os.path.relpath(entry.path, top).replace(os.sep, "/")
        if matches(relative, entry.is_dir):
            if len(found) < MAX_PATHS:
                found.append(relative + ("/" if entry.is_dir else ""))
            else:
                more += 1
    if not found:
        return ToolResult(
            f"no paths match {pattern!r} in the workspace (matching is case-sensitive; "
            ".git, dependency and cache directories and files ignored by .gitignore are skipped)",
            summary="0 paths",
        )
    lines = found + ([f"… {more:,} more paths not shown; narrow the pattern"] if more else [])
    return ToolResult("\n".join(lines), summary=plural(len(found) + more, "path"))


# ---- grep --------------------------------------------------------------------


class GrepTool(Tool, declared="grep"):
    async def run(self, arguments: dict[str, Any], context: ToolContext) -> ToolResult:
        return await asyncio.to_thread(grep, arguments, context)


@dataclass
class GrepReport:
    lines: list[str] = field(default_factory=list)
    matches: int = 0
    files_matched: int = 0
    too_large: list[str] = field(default_factory=list)
    unreadable: list[str] = field(default_factory=list)


def compile_pattern(pattern: str) -> re.Pattern[str]:
    try:
        return re.compile(pattern)
    except re.error as exc:
        raise ToolFailure(f"grep: {pattern!r} is not a valid regular expression: {exc}") from None


def grep(arguments: dict[str, Any], context: ToolContext) -> ToolResult:
    pattern = arguments["pattern"]
    regex = compile_pattern(pattern)
    prefilter = _prefilter(pattern)
    wanted = glob_matcher(arguments["glob"]) if arguments.get("glob") else None
    target = resolve(arguments.get("path") or ".", context)
    if not os.path.exists(target):
        raise ToolFailure(missing(target, context))
    report = GrepReport()
    for path in _files_to_search(target, wanted, context):
        _search_file(path, regex, prefilter, report, context)
    return ToolResult(_grep_output(pattern, target, report, context), summary=_grep_summary(report))


def _files_to_search(target: Path, wanted: PathMatcher | None, context: ToolContext) -> Iterator[Path]:
    if os.path.isfile(target):
        try:
            with open(target, "rb") as handle:
                head = handle.read(SNIFF_BYTES)
        except OSError as exc:
            raise os_failure(exc, target, context, "read") from None
        refuse_binary(head, target.stat().st_size, target, context, "grep searches text only")
        yield target
        return
    if not os.path.isdir(target):
        raise ToolFailure(f"{shown(target, context)} is neither a regular file nor a directory; grep cannot search it")
    base = _base_of(target, context)
    for entry in walk(base, target):
        if entry.is_dir or (wanted is not None and not wanted(entry.relative, False)):
            continue
        if entry.is_symlink and not (context.confinement.contains(entry.path) and os.path.isfile(entry.path)):
            continue
        yield entry.path


def _base_of(target: Path, context: ToolContext) -> Path:
    """The allowed directory `target` lies in (the innermost one when they nest)."""
    bases = [b for b in context.confinement.allowed if target == b or target.is_relative_to(b)]
    return max(bases, key=lambda b: len(b.parts))


def _search_file(
    path: Path, regex: re.Pattern[str], prefilter: re.Pattern[str] | None, report: GrepReport, context: ToolContext
) -> None:
    name = shown(path, context)
    try:
        if path.stat().st_size > MAX_GREP_FILE_BYTES:
            with open(path, "rb") as handle:
                if binary_kind(handle.read(SNIFF_BYTES)) is None:
                    report.too_large.append(name)
            return
        data = path.read_bytes()
    except OSError:
        report.unreadable.append(name)
        return
    if binary_kind(data[:SNIFF_BYTES]) is not None:
        return
    text = data.decode("utf-8", errors="replace")
    if "\r\n" in text:
        text = text.replace("\r\n", "\n")  # so that `$` matches at the end of CRLF lines too
    if prefilter is not None and not prefilter.search(text):
        return
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    found = False
    for number, line in enumerate(lines, 1):
        match = regex.search(line)
        if match is None:
            continue
        found = True
        report.matches += 1
        if report.matches <= MAX_MATCHES:
            report.lines.append(f"{name}:{number}: {shorten_around(line, match.start(), match.end())}")
    report.files_matched += found


def _prefilter(pattern: str) -> re.Pattern[str] | None:
    """The pattern over a whole file at once, to skip files quickly; None when that could miss a line's match."""
    if any(token in pattern for token in ("\\A", "\\Z", "(?!", "(?<!")):
        return None
    try:
        return re.compile(pattern, re.MULTILINE)
    except re.error:
        return None


def shorten_around(line: str, start: int, end: int, width: int = MAX_MATCH_LINE_CHARS) -> str:
    """`line` cut to about `width` characters around the match start..end."""
    if len(line) <= width:
        return line
    left = max(0, min(start - width // 3, len(line) - width))
    right = left + width
    return ("…" if left > 0 else "") + line[left:right] + ("…" if right < len(line) else "")


def _grep_output(pattern: str, target: Path, report: GrepReport, context: ToolContext) -> str:
    notes: list[str] = []
    if report.matches > MAX_MATCHES:
        notes.append(f"{report.matches - MAX_MATCHES:,} more matches not shown; narrow with path or glob")
    if report.too_large:
        notes.append(f"{plural(len(report.too_large), 'file')} over 5 MB not searched: {_some(report.too_large)}")
    if report.unreadable:
        notes.append(f"{plural(len(report.unreadable), 'file')} could not be read: {_some(report.unreadable)}")
    if not report.lines:
        head = f"no matches for {pattern!r} in {shown(target, context)}"
        return "\n".join([head, *notes])
    return "\n".join([*report.lines, *notes])


def _some(names: list[str], count: int = 5) -> str:
    return ", ".join(names[:count]) + (", …" if len(names) > count else "")


def _grep_summary(report: GrepReport) -> str:
    return f"{plural(report.matches, 'match', 'matches')} in {plural(report.files_matched, 'file')}"
