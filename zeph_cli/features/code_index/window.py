"""What of the project's code the conversation already holds, and what it talks about.

Invariant: pure (messages and paths in, values out; no file is read). A file's lines are "in the window"
when a `read_file` call in the given messages showed them, or a `search_code` result or `<code_context>`
named them (`path:start-end`); the code index leaves those chunks out of `<code_context>`, so nothing is
sent twice. Paths are the project's ('/'-separated, relative to its root); a path outside the project
is left out. The conversation's files (read, written, edited, named) and identifiers personalize the repo map.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath

from ...messages import Message
from .languages import language_of
from .words import code_names

READ_LIMIT = 2000  # read_file's default number of lines (tools/specs.py DEFAULT_READ_LIMIT)
FILE_TOOLS = ("read_file", "write_file", "edit_file")
# `path:12-40` as search_code and <code_context> name a chunk
_CHUNK_HEADER = re.compile(r"^(?:#+\s*|─+\s*)?([\w./@+-]+\.[\w]+):(\d+)-(\d+)\b", re.M)
_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_CAPITALIZED = re.compile(r"\b[A-Z][a-z]{3,}\b")  # one hump (Agent, Compactor): code only inside a sentence
_PATHLIKE = re.compile(r"(?<![\w/.-])((?:[\w.-]+/)*[\w-]+\.[A-Za-z][\w]{0,9})(?![\w/])")


@dataclass
class Window:
    """Line ranges of project files the conversation holds, by path."""

    ranges: dict[str, list[tuple[int, int]]] = field(default_factory=dict)

    def add(self, path: str, start: int, end: int) -> None:
        self.ranges.setdefault(path, []).append((start, end))

    def holds(self, path: str, start: int, end: int) -> bool:
        """Whether the lines start..end of `path` are all shown already (by one range)."""
        return any(a <= start and end <= b for a, b in self.ranges.get(path, ()))

    @property
    def paths(self) -> set[str]:
        return set(self.ranges)


def relative(path: str, root: Path, cwd: Path) -> str | None:
    """`path` (as a tool was given it: absolute, or relative to `cwd`) as the project names it, or None."""
    if not path:
        return None
    full = Path(path) if Path(path).is_absolute() else cwd / path
    try:
        inside = full.resolve(strict=False).relative_to(root)
    except ValueError:
        return None
    return PurePosixPath(*inside.parts).as_posix() if inside.parts else None


def window_of(messages: Iterable[Message], root: Path, cwd: Path) -> Window:
    """What `messages` show of the project's files (see the module's invariant)."""
    window = Window()
    for message in messages:
        for call in message.tool_calls:
            if call.name != "read_file":
                continue
            path = relative(str(call.arguments.get("path", "")), root, cwd)
            if path is None:
                continue
            offset = _int(call.arguments.get("offset"), 1)
            limit = _int(call.arguments.get("limit"), READ_LIMIT)
            window.add(path, offset, offset + limit - 1)
        if message.role in ("tool", "user", "context") or message.tool_results:
            text = message.content
            if ":" in text:
                for found in _CHUNK_HEADER.finditer(text):
                    window.add(found.group(1), int(found.group(2)), int(found.group(3)))
    return window


def conversation_files(messages: Iterable[Message], root: Path, cwd: Path, known: Iterable[str] = ()) -> list[str]:
    """The project files the conversation uses: those a file tool was given, and those its texts name
    (among `known`, the indexed paths, matched whole or by their last parts), most recent last."""
    known_set = set(known)
    by_name: dict[str, list[str]] = {}
    for path in known_set:
        by_name.setdefault(path.rsplit("/", 1)[-1], []).append(path)
    seen: dict[str, None] = {}
    for message in messages:
        for call in message.tool_calls:
            if call.name in FILE_TOOLS:
                used = relative(str(call.arguments.get("path", "")), root, cwd)
                if used is not None:
                    seen.pop(used, None)
                    seen[used] = None
        if message.role in ("user", "assistant"):
            for found in _PATHLIKE.findall(message.content):
                for path in _known_path(found, known_set, by_name):
                    seen.pop(path, None)
                    seen[path] = None
    return list(seen)


def _known_path(text: str, known: set[str], by_name: dict[str, list[str]]) -> list[str]:
    text = text.lstrip("./")
    if text in known:
        return [text]
    candidates = by_name.get(text.rsplit("/", 1)[-1], [])
    matching = [path for path in candidates if path.endswith("/" + text) or path == text]
    return matching if len(matching) <= 3 else []  # a bare name many files share names none of them


def identifiers(texts: Sequence[str]) -> set[str]:
    """The names `texts` write as code (`words.code_names`), a dotted one's parts too, as written (the map
    matches names exactly), and a capitalized word inside a sentence (`the Compactor keeps…`: a class,
    most likely); paths and file names are left to `conversation_files`."""
    found: set[str] = set()
    for text in texts:
        for name in code_names(text):
            if "/" not in name and language_of(name) is None:  # a file (sample.go) is conversation_files' work
                found.update(part for part in name.split(".") if _NAME.fullmatch(part) and len(part) > 2)
        for match in _CAPITALIZED.finditer(text):
            before = text[:match.start()].rstrip()
            if before and before[-1] not in ".!?:\n\"'`(#*-":
                found.add(match.group())
    return found


def _int(value: object, default: int) -> int:
    try:
        number = int(value)  # type: ignore[call-overload]
    except (TypeError, ValueError):
        return default
    return number if number >= 1 else default
