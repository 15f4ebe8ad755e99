"""Reading and writing workspace files as text, for the file and search tools.

Invariant: every path a tool names is resolved through the context's
`Confinement` first; a missing, unreadable, binary or oversized file or a
directory ends as a `ToolFailure` sentence naming the path, and bytes that are
not UTF-8 are replaced (their first offset reported), never raised.
"""

from __future__ import annotations

import contextlib
import difflib
import errno
import os
import secrets
import stat
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO

from .base import ToolContext
from .failures import ToolFailure

SNIFF_BYTES = 8192
MAX_TEXT_BYTES = 20 * 1024 * 1024

_MAGIC: tuple[tuple[bytes, str], ...] = (
    (b"\x89PNG\r\n\x1a\n", "PNG image"),
    (b"\xff\xd8\xff", "JPEG image"),
    (b"GIF87a", "GIF image"),
    (b"GIF89a", "GIF image"),
    (b"%PDF-", "PDF document"),
    (b"PK\x03\x04", "ZIP archive"),
    (b"PK\x05\x06", "ZIP archive"),
    (b"\x1f\x8b", "gzip archive"),
    (b"BZh91AY&SY", "bzip2 archive"),
    (b"\xfd7zXZ\x00", "xz archive"),
    (b"7z\xbc\xaf\x27\x1c", "7-Zip archive"),
    (b"\x7fELF", "ELF executable"),
    (b"\xcf\xfa\xed\xfe", "Mach-O executable"),
    (b"\xce\xfa\xed\xfe", "Mach-O executable"),
    (b"\xca\xfe\xba\xbe", "Java class or Mach-O executable"),
    (b"\x00asm", "WebAssembly module"),
    (b"SQLite format 3\x00", "SQLite database"),
    (b"RIFF", "RIFF media file"),
    (b"OggS", "Ogg media file"),
    (b"fLaC", "FLAC audio"),
    (b"ID3\x03", "MP3 audio"),
    (b"ID3\x04", "MP3 audio"),
    (b"\x1a\x45\xdf\xa3", "Matroska/WebM media"),
    (b"wOFF", "WOFF font"),
    (b"wOF2", "WOFF2 font"),
    (b"\xff\xfe", "UTF-16 text"),
    (b"\xfe\xff", "UTF-16 text"),
)


def binary_kind(head: bytes) -> str | None:
    """What kind of binary file starts with `head` (its first bytes), or None for text."""
    for magic, kind in _MAGIC:
        if head.startswith(magic):
            if kind == "UTF-16 text" and b"\x00" not in head:
                continue  # Latin-1 text may start with these bytes too.
            return kind
    if head[4:8] == b"ftyp":
        return "MP4/QuickTime media"
    if b"\x00" in head[:SNIFF_BYTES]:
        return "binary data"
    return None


def human_size(size: int) -> str:
    if size < 1024:
        return f"{size} B"
    value = float(size)
    for unit in ("KB", "MB", "GB"):
        value /= 1024
        if value < 1024:
            return f"{value:.1f} {unit}"
    return f"{value / 1024:.1f} TB"


def plural(count: int, noun: str, nouns: str = "") -> str:
    """`1 line`, `3 lines`, `1,200 entries` (irregular plurals given as `nouns`)."""
    return f"{count:,} {noun if count == 1 else (nouns or noun + 's')}"


def count_lines(content: str | bytes) -> int:
    """Lines as editors count them: a last line without a newline still counts."""
    newline = "\n" if isinstance(content, str) else b"\n"
    if not content:
        return 0
    return content.count(newline) + (0 if content.endswith(newline) else 1)  # type: ignore[arg-type]


def resolve(raw: str, context: ToolContext) -> Path:
    """The real path `raw` names, relative to the tool's cwd; refused outside the workspace."""
    return context.confinement.resolve(raw, context.cwd)


def shown(path: Path, context: ToolContext) -> str:
    return context.confinement.display(path)


def missing(path: Path, context: ToolContext) -> str:
    """'x does not exist', with close names from the same directory when there are any."""
    message = f"{shown(path, context)} does not exist"
    parent = path.parent
    try:
        names = os.listdir(parent)
    except FileNotFoundError:
        return message + f" (nor does the directory {shown(parent, context)})"
    except OSError:
        return message
    close = difflib.get_close_matches(path.name, names, n=3, cutoff=0.7)
    if not close:
        return message
    return message + "; did you mean " + " or ".join(shown(parent / name, context) for name in close) + "?"


def os_failure(exc: OSError, path: Path, context: ToolContext, doing: str) -> ToolFailure:
    """A sentence for an OSError met while `doing` ("read", "write", "list") `path`."""
    if isinstance(exc, FileNotFoundError):
        return ToolFailure(missing(path, context))
    if isinstance(exc, PermissionError):
        return ToolFailure(f"cannot {doing} {shown(path, context)}: permission denied")
    if doing == "write" and exc.errno in (errno.ELOOP, errno.ENOTDIR):
        return ToolFailure(f"cannot write {shown(path, context)}: a directory on its path is not a directory or has "
                           "become a symbolic link since the path was checked; nothing was written")
    return ToolFailure(f"cannot {doing} {shown(path, context)}: {exc.strerror or exc}")


def existing_file(raw: str, context: ToolContext, tool: str) -> tuple[Path, os.stat_result]:
    """The confined path of an existing regular file, with its stat."""
    path = resolve(raw, context)
    try:
        info = os.stat(path)
    except NotADirectoryError:
        raise ToolFailure(missing(path, context)) from None
    except OSError as exc:
        raise os_failure(exc, path, context, "read") from None
    if stat.S_ISDIR(info.st_mode):
        raise ToolFailure(f"{shown(path, context)} is a directory; use list_directory to see its entries")
    if not stat.S_ISREG(info.st_mode):
        raise ToolFailure(f"{shown(path, context)} is not a regular file; {tool} works on regular files only")
    return path, info


def refuse_binary(head: bytes, size: int, path: Path, context: ToolContext, note: str) -> None:
    """Raise when `head` (the file's first bytes) shows a binary file; `note` ends the sentence."""
    kind = binary_kind(head)
    if kind is not None:
        raise ToolFailure(f"{shown(path, context)} is a binary file ({kind}, {size:,} bytes); {note}")


def decode(data: bytes) -> tuple[str, int | None]:
    """UTF-8 text, and the offset of the first byte that is not UTF-8 (None when all are)."""
    try:
        return data.decode("utf-8"), None
    except UnicodeDecodeError as exc:
        return data.decode("utf-8", errors="replace"), exc.start


@dataclass(frozen=True)
class TextFile:
    path: Path
    text: str
    size: int
    bad_offset: int | None  # first byte that is not UTF-8


def read_text_file(raw: str, context: ToolContext, tool: str, binary_note: str, too_large_note: str) -> TextFile:
    """A whole existing text file, at most MAX_TEXT_BYTES."""
    path, info = existing_file(raw, context, tool)
    if info.st_size > MAX_TEXT_BYTES:
        raise ToolFailure(
            f"{shown(path, context)} is {human_size(info.st_size)}, more than {tool} handles at once "
            f"({human_size(MAX_TEXT_BYTES)}); {too_large_note}"
        )
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise os_failure(exc, path, context, "read") from None
    refuse_binary(data[:SNIFF_BYTES], len(data), path, context, binary_note)
    text, bad_offset = decode(data)
    return TextFile(path, text, len(data), bad_offset)


# ---- line paging -------------------------------------------------------------


@dataclass(frozen=True)
class Page:
    lines: tuple[str, ...]  # without their line endings
    first: int  # 1-based number of lines[0]
    total: int  # lines in the whole file
    long_lines: dict[int, int]  # index in `lines` -> full length in bytes, for lines cut to max_chars
    bad_offset: int | None  # first byte among the shown lines that is not UTF-8


def read_page(path: Path, offset: int, limit: int, max_chars: int) -> Page:
    """Lines offset..offset+limit-1 of a file, streamed: memory stays bounded on any file."""
    keep = max_chars * 4 + 4  # enough bytes for max_chars characters of UTF-8
    lines: list[str] = []
    long_lines: dict[int, int] = {}
    bad_offset: int | None = None
    number = 0
    position = 0
    with open(path, "rb") as handle:
        for head, length in _raw_lines(handle, keep):
            number += 1
            if number >= offset:
                cut = length > len(head)
                text, bad = _decode_line(head, cut)
                if bad is not None and bad_offset is None:
                    bad_offset = position + bad
                if cut or len(text) > max_chars:
                    long_lines[len(lines)] = length
                    text = text[:max_chars]
                lines.append(text)
            position += length
            if len(lines) == limit:
                number += count_remaining_lines(handle)
                break
    return Page(tuple(lines), offset, number, long_lines, bad_offset)


def _raw_lines(handle: BinaryIO, keep: int) -> Iterator[tuple[bytes, int]]:
    """Each line's first `keep` bytes (newline included when kept) and its full length in bytes;
    the handle is left at the start of the next line."""
    while True:
        head = handle.readline(keep)
        if not head:
            return
        length = len(head)
        if len(head) == keep and not head.endswith(b"\n"):
            while more := handle.readline(1 << 16):
                length += len(more)
                if more.endswith(b"\n"):
                    break
        yield head, length


def _decode_line(head: bytes, cut: bool) -> tuple[str, int | None]:
    body = head.rstrip(b"\n").removesuffix(b"\r") if not cut else head
    try:
        return body.decode("utf-8"), None
    except UnicodeDecodeError as exc:
        if cut and exc.end == len(body) and exc.reason == "unexpected end of data":
            return _decode_line(body[: exc.start], cut=False)  # a character split by the cut
        return body.decode("utf-8", errors="replace"), exc.start


def count_remaining_lines(handle: BinaryIO) -> int:
    """Lines from the current position (the start of a line) to the end of the file."""
    count = 0
    last = b"\n"
    while chunk := handle.read(1 << 20):
        count += chunk.count(b"\n")
        last = chunk[-1:]
    return count + (0 if last == b"\n" else 1)


# ---- writing -----------------------------------------------------------------


def write_atomically(path: Path, text: str) -> None:
    """Write UTF-8 text through a temporary file in the same directory, keeping the file's mode.

    `path` is the real path confinement checked. The directory is reached one component at a time from
    `/` without following any symlink (missing ones are made the same way), and the temporary file is
    made and renamed inside that directory's descriptor: a directory swapped for a link to elsewhere after
    the check (a command left running in the background can race the tool) fails with ELOOP or ENOTDIR
    instead of leading the write outside the workspace."""
    data = text.encode("utf-8", errors="replace")
    directory = directory_beneath_root(path.parent, create=True)
    try:
        try:
            mode = stat.S_IMODE(os.stat(path.name, dir_fd=directory, follow_symlinks=False).st_mode)
        except FileNotFoundError:
            mode = 0o666 & ~_umask()
        else:
            if not os.access(path.name, os.W_OK, dir_fd=directory):  # replacing would succeed; the file is read-only
                raise PermissionError(errno.EACCES, "permission denied", str(path))
        temporary = f".{path.name}.{secrets.token_hex(6)}.tmp"
        fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600, dir_fd=directory)
        try:
            with os.fdopen(fd, "wb") as handle:
                handle.write(data)
                handle.flush()
                os.fchmod(handle.fileno(), mode)
                os.fsync(handle.fileno())
            os.replace(temporary, path.name, src_dir_fd=directory, dst_dir_fd=directory)
        except BaseException:
            with contextlib.suppress(OSError):
                os.unlink(temporary, dir_fd=directory)
            raise
    finally:
        os.close(directory)


_DIRECTORY_FLAGS = getattr(os, "O_PATH", os.O_RDONLY) | os.O_DIRECTORY | os.O_NOFOLLOW  # O_PATH: no read right needed


def directory_beneath_root(directory: Path, *, create: bool = False) -> int:
    """A descriptor of `directory` (absolute and real), opened component by component from `/` following no
    symlink; missing components are made when `create`. A component that is (now) a symlink raises OSError
    (ELOOP or ENOTDIR)."""
    fd = os.open("/", _DIRECTORY_FLAGS)
    try:
        for part in directory.parts[1:]:
            try:
                inner = os.open(part, _DIRECTORY_FLAGS, dir_fd=fd)
            except FileNotFoundError:
                if not create:
                    raise
                with contextlib.suppress(FileExistsError):
                    os.mkdir(part, 0o777, dir_fd=fd)
                inner = os.open(part, _DIRECTORY_FLAGS, dir_fd=fd)
            os.close(fd)
            fd = inner
        return fd
    except BaseException:
        os.close(fd)
        raise


def _umask() -> int:
    with contextlib.suppress(OSError, ValueError):
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("Umask:"):
                return int(line.split()[1], 8)
    current = os.umask(0o022)
    os.umask(current)
    return current


def unified_diff(old: str, new: str, old_name: str, new_name: str, max_lines: int = 200) -> str:
    """A unified diff of two texts, cut to `max_lines` lines with a note."""
    lines: list[str] = []
    for line in difflib.unified_diff(
        old.splitlines(keepends=True), new.splitlines(keepends=True), old_name, new_name
    ):
        if line.endswith("\n"):
            lines.append(line)
        else:
            lines.extend([line + "\n", "\\ No newline at end of file\n"])
    if len(lines) > max_lines:
        hidden = len(lines) - max_lines
        lines = [*lines[:max_lines], f"… {hidden:,} more diff lines not shown\n"]
    return "".join(lines).rstrip("\n")
