"""The file tools: read_file, list_directory, write_file and edit_file.

Invariant: every path goes through the context's `Confinement` before any
file-system access; writes are atomic (a temporary file in the same directory,
then `os.replace`) and keep the file's mode; an edit changes exactly one
occurrence of its text or nothing at all.
"""

from __future__ import annotations

import asyncio
import os
import re
import stat
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .base import Tool, ToolContext, ToolResult
from .specs import DEFAULT_READ_LIMIT, MAX_LINE_CHARS
from .failures import ToolFailure
from .text_files import (
    MAX_TEXT_BYTES,
    SNIFF_BYTES,
    binary_kind,
    count_lines,
    count_remaining_lines,
    existing_file,
    Page,
    human_size,
    os_failure,
    plural,
    read_page,
    read_text_file,
    refuse_binary,
    resolve,
    shown,
    unified_diff,
    write_atomically,
)

MAX_DIRECTORY_ENTRIES = 1000


# ---- read_file ---------------------------------------------------------------


class ReadFileTool(Tool, declared="read_file"):
    async def run(self, arguments: dict[str, Any], context: ToolContext) -> ToolResult:
        return await asyncio.to_thread(read_file, arguments, context)


def read_file(arguments: dict[str, Any], context: ToolContext) -> ToolResult:
    path, info = existing_file(arguments["path"], context, "read_file")
    name = shown(path, context)
    offset = arguments.get("offset") or 1
    limit = arguments.get("limit") or DEFAULT_READ_LIMIT
    if info.st_size == 0:
        return ToolResult("(empty file)", summary="0 lines")
    if info.st_size > MAX_TEXT_BYTES and "offset" not in arguments and "limit" not in arguments:
        raise ToolFailure(
            f"{name} is {human_size(info.st_size)}, more than read_file shows at once ({human_size(MAX_TEXT_BYTES)}); "
            "read part of it with offset and limit, or find what you need with grep"
        )
    try:
        with open(path, "rb") as handle:
            head = handle.read(SNIFF_BYTES)
        refuse_binary(head, info.st_size, path, context, "read_file shows text only")
        page = read_page(path, offset, limit, MAX_LINE_CHARS)
    except OSError as exc:
        raise os_failure(exc, path, context, "read") from None
    if not page.lines:
        raise ToolFailure(f"offset {offset} is past the end of {name}, which has {plural(page.total, 'line')}")
    return ToolResult(format_page(page, name), summary=_page_summary(page))


def format_page(page: Page, name: str) -> str:
    """Numbered lines like `cat -n`, with notes on encoding, cut lines and the range shown."""
    out: list[str] = []
    if page.bad_offset is not None:
        out.append(
            f"(note: {name} is not valid UTF-8 — first bad byte at offset {page.bad_offset:,}; "
            "undecodable bytes are shown as �)"
        )
    for index, line in enumerate(page.lines):
        if index in page.long_lines:
            line += f" … [line cut at {MAX_LINE_CHARS:,} characters; it is {page.long_lines[index]:,} bytes long]"
        out.append(f"{page.first + index:>6}\t{line}")
    last = page.first + len(page.lines) - 1
    if page.first > 1 or last < page.total:
        where = f"continue with offset={last + 1}" if last < page.total else "end of file"
        out.append(f"(showing lines {page.first:,}-{last:,} of {page.total:,}; {where})")
    return "\n".join(out)


def _page_summary(page: Page) -> str:
    count = len(page.lines)
    if count == page.total:
        return plural(count, "line")
    return f"{plural(count, 'line')} ({page.first:,}-{page.first + count - 1:,} of {page.total:,})"


# ---- list_directory ----------------------------------------------------------


class ListDirectoryTool(Tool, declared="list_directory"):
    async def run(self, arguments: dict[str, Any], context: ToolContext) -> ToolResult:
        return await asyncio.to_thread(list_directory, arguments, context)


def list_directory(arguments: dict[str, Any], context: ToolContext) -> ToolResult:
    path = resolve(arguments.get("path") or ".", context)
    try:
        with os.scandir(path) as listing:
            entries = list(listing)
    except NotADirectoryError:
        raise ToolFailure(f"{shown(path, context)} is a file, not a directory; use read_file to read it") from None
    except OSError as exc:
        raise os_failure(exc, path, context, "list") from None
    if not entries:
        return ToolResult("(empty directory)", summary="0 entries")
    lines = [describe_entry(entry) for entry in sorted(entries, key=_entry_order)]
    shown_lines = lines[:MAX_DIRECTORY_ENTRIES]
    if len(lines) > MAX_DIRECTORY_ENTRIES:
        shown_lines.append(f"… {len(lines) - MAX_DIRECTORY_ENTRIES:,} more entries not shown")
    return ToolResult("\n".join(shown_lines), summary=plural(len(lines), "entry", "entries"))


def _entry_order(entry: os.DirEntry[str]) -> tuple[bool, str, str]:
    try:
        is_dir = entry.is_dir(follow_symlinks=False)
    except OSError:
        is_dir = False
    return (not is_dir, entry.name.casefold(), entry.name)


def describe_entry(entry: os.DirEntry[str]) -> str:
    """`name/` for a directory, `name -> target` for a symlink, `name  size` for a file."""
    try:
        if entry.is_symlink():
            return f"{entry.name} -> {os.readlink(entry.path)}"
        if entry.is_dir(follow_symlinks=False):
            return entry.name + "/"
        info = entry.stat(follow_symlinks=False)
    except OSError:
        return entry.name
    if stat.S_ISREG(info.st_mode):
        return f"{entry.name}  {human_size(info.st_size)}"
    return f"{entry.name}  ({_special_kind(info.st_mode)})"


def _special_kind(mode: int) -> str:
    if stat.S_ISFIFO(mode):
        return "fifo"
    if stat.S_ISSOCK(mode):
        return "socket"
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return "device"
    return "special file"


# ---- write_file --------------------------------------------------------------


class WriteFileTool(Tool, declared="write_file"):
    async def run(self, arguments: dict[str, Any], context: ToolContext) -> ToolResult:
        return await asyncio.to_thread(write_file, arguments, context)

    def preview(self, arguments: dict[str, Any], context: ToolContext) -> str:
        """What the write would change, as a unified diff, for the user's confirmation."""
        return _safe_preview(write_preview, arguments, context)


def _writable_target(raw: str, context: ToolContext) -> Path:
    path = resolve(raw, context)
    context.confinement.check_write(path, raw)
    if os.path.isdir(path):
        raise ToolFailure(f"{shown(path, context)} is a directory; give write_file the path of a file")
    return path


def write_file(arguments: dict[str, Any], context: ToolContext) -> ToolResult:
    path = _writable_target(arguments["path"], context)
    content: str = arguments["content"]
    name = shown(path, context)
    previous = _line_count_if_exists(path, context)
    if REDACTION_MARK in content:
        check_written_content(content, _existing_text(path))
    try:
        _check_parents(path, context)
        write_atomically(path, content)
    except OSError as exc:
        raise os_failure(exc, path, context, "write") from None
    lines = count_lines(content)
    if previous is None:
        message = f"created {name} ({plural(lines, 'line')})"
    else:
        message = f"overwrote {name} ({plural(lines, 'line')}, was {plural(previous, 'line')})"
    return ToolResult(message, summary=message)


def _existing_text(path: Path) -> str | None:
    try:
        return path.read_bytes().decode("utf-8", errors="replace")
    except OSError:
        return None


def _line_count_if_exists(path: Path, context: ToolContext) -> int | None:
    try:
        with open(path, "rb") as handle:
            return count_remaining_lines(handle)
    except (FileNotFoundError, NotADirectoryError):
        return None
    except OSError as exc:
        raise os_failure(exc, path, context, "write") from None


def _check_parents(path: Path, context: ToolContext) -> None:
    """Refuse a path whose directory cannot be made because a file stands where a directory should
    (the directories themselves are made by write_atomically, following no symlink)."""
    blocker = next((p for p in reversed(path.parents) if os.path.lexists(p) and not os.path.isdir(p)), None)
    if blocker is not None:
        name, blocking = shown(path, context), shown(blocker, context)
        raise ToolFailure(f"cannot create {name}: {blocking} is not a directory")


def write_preview(arguments: dict[str, Any], context: ToolContext) -> str:
    path = _writable_target(str(arguments.get("path", "")), context)
    content = str(arguments.get("content", ""))
    name = shown(path, context)
    if not os.path.exists(path):
        return unified_diff("", content, "/dev/null", f"b/{name}") or f"create the empty file {name}"
    try:
        with open(path, "rb") as handle:
            head = handle.read(SNIFF_BYTES)
    except OSError as exc:
        return str(os_failure(exc, path, context, "read"))
    kind = binary_kind(head)
    if kind is not None:
        lines = plural(count_lines(content), "line")
        diff = unified_diff("", content, f"a/{name}", f"b/{name}")
        return f"replace the binary file {name} ({kind}) with {lines} of text\n{diff}"
    old = read_text_file(str(path), context, "write_file", "", "its old content cannot be shown")
    return unified_diff(old.text, content, f"a/{name}", f"b/{name}") or f"no change: {name} already has this content"


# ---- edit_file ---------------------------------------------------------------


class EditFileTool(Tool, declared="edit_file"):
    async def run(self, arguments: dict[str, Any], context: ToolContext) -> ToolResult:
        return await asyncio.to_thread(edit_file, arguments, context)

    def preview(self, arguments: dict[str, Any], context: ToolContext) -> str:
        """What the edit would change, as a unified diff, for the user's confirmation."""
        return _safe_preview(edit_preview, arguments, context)


@dataclass(frozen=True)
class Edit:
    text: str  # the whole new content
    line: int  # where the replaced text starts (1-based)
    removed: int  # lines the old text spanned
    added: int  # lines the new text spans


def plan_edit(text: str, old: str, new: str, name: str) -> Edit:
    """Replace the one occurrence of `old` in `text`, in the text's own line endings."""
    check_edit_strings(old, new)
    in_file_endings = (_in_line_endings_of(text, old), _in_line_endings_of(text, new))
    for old_here, new_here in dict.fromkeys([in_file_endings, (old, new)]):
        positions = _occurrences(text, old_here)
        if len(positions) > 1:
            raise ToolFailure(_many_matches(text, positions, name))
        if positions:
            at = positions[0]
            return Edit(
                text[:at] + new_here + text[at + len(old_here):],
                text.count("\n", 0, at) + 1,
                count_lines(old_here),
                count_lines(new_here),
            )
    raise ToolFailure(_not_found(text, old, name))


def check_edit_strings(old: str, new: str) -> None:
    if not old:
        raise ToolFailure("old_string is empty; use write_file to create or overwrite a whole file")
    if old == new:
        raise ToolFailure("old_string and new_string are identical; there is nothing to change")
    if new.count(REDACTION_MARK) > old.count(REDACTION_MARK):
        raise ToolFailure(_REDACTED_WRITE)


REDACTION_MARK = "[REDACTED]"
_REDACTED_WRITE = (
    f"the new text contains {REDACTION_MARK}: secrets are shown redacted in tool output, so writing this would "
    "replace the real value with the marker; leave the lines holding secrets out of the change"
)


def check_written_content(content: str, previous: str | None) -> None:
    """Refuse a write that would put redaction markers where the file has none."""
    if content.count(REDACTION_MARK) > (previous or "").count(REDACTION_MARK):
        raise ToolFailure(_REDACTED_WRITE + " (use edit_file around them)")


def _in_line_endings_of(text: str, snippet: str) -> str:
    """`snippet` with the line endings `text` mostly uses (CRLF or LF)."""
    crlf = text.count("\r\n")
    lf = text.count("\n") - crlf
    as_lf = snippet.replace("\r\n", "\n")
    return as_lf.replace("\n", "\r\n") if crlf > lf else as_lf


def _occurrences(text: str, snippet: str) -> list[int]:
    """Every start of `snippet` in `text`, overlapping ones included."""
    positions: list[int] = []
    at = text.find(snippet)
    while at != -1:
        positions.append(at)
        at = text.find(snippet, at + 1)
    return positions


def _many_matches(text: str, positions: list[int], name: str) -> str:
    lines = [str(text.count("\n", 0, at) + 1) for at in positions[:10]]
    more = ", …" if len(positions) > 10 else ""
    return (
        f"old_string occurs {len(positions)} times in {name} (lines {', '.join(lines)}{more}); "
        "include more surrounding context so it is unique"
    )


_LINE_NUMBER_PREFIX = re.compile(r"^\s*\d+\t")


def _not_found(text: str, old: str, name: str) -> str:
    hints: list[str] = []
    if REDACTION_MARK in old:
        hints.append("the file's secrets are shown redacted; edit around them")
    lines = [line for line in old.splitlines() if line.strip()]
    if lines and all(_LINE_NUMBER_PREFIX.match(line) for line in lines):
        hints.append("old_string seems to include read_file's line numbers; leave them out")
    squashed = _squash(old)
    if squashed and squashed in _squash(text):
        hints.append(
            "it does match when whitespace is ignored, so check indentation, tabs versus spaces and line endings"
        )
    message = f"old_string was not found in {name}"
    return message + ("; " + "; ".join(hints) if hints else "; read the file again and copy the text exactly")


def _squash(text: str) -> str:
    return re.sub(r"\s+", " ", text).strip()


def _editable(arguments: dict[str, Any], context: ToolContext) -> tuple[Path, str]:
    text_file = read_text_file(
        arguments["path"], context, "edit_file", "edit_file edits text only", "change it with a script through bash"
    )
    name = shown(text_file.path, context)
    if text_file.bad_offset is not None:
        raise ToolFailure(
            f"{name} is not UTF-8 (first bad byte at offset {text_file.bad_offset:,}); editing would corrupt it"
        )
    return text_file.path, text_file.text


def edit_file(arguments: dict[str, Any], context: ToolContext) -> ToolResult:
    old, new = arguments["old_string"], arguments["new_string"]
    check_edit_strings(old, new)
    path, text = _editable(arguments, context)
    context.confinement.check_write(path, str(arguments.get("path", "")))
    name = shown(path, context)
    edit = plan_edit(text, old, new, name)
    try:
        write_atomically(path, edit.text)
    except OSError as exc:
        raise os_failure(exc, path, context, "write") from None
    replaced = f"replaced {plural(edit.removed, 'line')} with {plural(edit.added, 'line')} at line {edit.line:,}"
    message = f"edited {name}: {replaced}"
    return ToolResult(message, summary=f"{name}: -{edit.removed} +{edit.added} lines at line {edit.line}")


def edit_preview(arguments: dict[str, Any], context: ToolContext) -> str:
    old, new = str(arguments.get("old_string", "")), str(arguments.get("new_string", ""))
    check_edit_strings(old, new)
    path, text = _editable({"path": str(arguments.get("path", ""))}, context)
    name = shown(path, context)
    edit = plan_edit(text, old, new, name)
    return unified_diff(text, edit.text, f"a/{name}", f"b/{name}")


def _safe_preview(make: Any, arguments: dict[str, Any], context: ToolContext) -> str:
    """A preview, or the sentence saying why there is none; never raises."""
    try:
        return make(arguments, context)
    except ToolFailure as exc:
        return str(exc)
    except Exception as exc:  # noqa: BLE001 — a preview must never break the confirmation dialog
        return f"no preview: {exc}"


__all__ = [
    "EditFileTool",
    "ListDirectoryTool",
    "ReadFileTool",
    "WriteFileTool",
    "plan_edit",
]
