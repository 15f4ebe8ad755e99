"""JSON Lines histories: one message per line, `{"session": …, "role": …, "content": …}`.

Invariant: the whole file is read and checked before anything is stored, so a bad
line stops the import with nothing written — unless bad lines are to be skipped, when
each is counted and named. Optional fields: `timestamp` (ISO 8601 or Unix seconds; kept
as the message's time), `id` (the source's id, kept with the message), `title` (the
session's). Sessions keep the order their first line has in the file, and messages the
order of their lines. Fields other than these are ignored.

The text is UTF-8; a UTF-8 byte order mark (as Windows tools write one at the start of a
file, or of each file concatenated into one) is not part of the line. A file in UTF-16 or
UTF-32 is refused whole, even with bad lines skipped, since none of its lines could be read.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

from ....store.imports import ImportedMessage, ImportedSession
from .common import KNOWN_ROLES, ROLES, SKIP_REASON, ImportProblem, Skipped, parse_time

SOURCE = "jsonl"


@dataclass
class JsonlHistory:
    """What a JSON Lines file holds: its sessions, what was left out, and the bad lines skipped."""

    sessions: list[ImportedSession]
    skipped: Skipped = field(default_factory=Skipped)
    bad_lines: list[str] = field(default_factory=list)  # "line N: …", when bad lines are skipped
    lines: int = 0


class _BadLine(ValueError):
    pass


UTF8_BOM = b"\xef\xbb\xbf"
# Byte order marks of the encodings a JSON Lines file must not be in (UTF-32 first: its LE mark starts as UTF-16's).
_OTHER_BOMS = ((b"\xff\xfe\x00\x00", "UTF-32"), (b"\x00\x00\xfe\xff", "UTF-32"),
               (b"\xff\xfe", "UTF-16"), (b"\xfe\xff", "UTF-16"))


def _wrong_encoding(first: bytes) -> tuple[str, str] | None:
    """What the file whose first line is `first` is if it is not UTF-8 text at all, and its encoding's
    name for iconv (None: it may be UTF-8)."""
    for mark, encoding in _OTHER_BOMS:
        if first.startswith(mark):
            return f"{encoding} text (it starts with a {encoding} byte order mark)", encoding
    text = first.rstrip(b"\r\n")
    if len(text) < 2 or text.count(0) * 4 < len(text):  # ASCII in UTF-16/32: a NUL beside every character
        return None
    head = (text + b"\x00\x00\x00")[:4]
    encoding = ("UTF-32LE" if head[1:4] == b"\x00\x00\x00" else "UTF-32BE" if head[:3] == b"\x00\x00\x00"
                else "UTF-16BE" if head[0] == 0 else "UTF-16LE")
    return f"{encoding} text (a NUL byte beside each of its characters)", encoding


def read_jsonl(
    lines: Iterable[bytes], name: str, *, skip_bad: bool = False, progress: Callable[[int], Any] | None = None
) -> JsonlHistory:
    """The sessions of a JSON Lines file given as its lines (bytes); `progress(bytes)` after each line.
    Raises `ImportProblem` for the first bad line unless `skip_bad`."""
    sessions: dict[str, ImportedSession] = {}
    positions: dict[str, int] = {}
    ids: dict[str, set[str]] = {}
    history = JsonlHistory([])
    number = 0
    for number, raw in enumerate(lines, start=1):
        if progress is not None:
            progress(len(raw))
        if number == 1 and (wrong := _wrong_encoding(raw)) is not None:
            what, encoding = wrong
            raise ImportProblem(f"{name} line 1: {what}, not UTF-8; nothing was imported "
                                f"(convert it first: iconv -f {encoding} -t UTF-8)")
        try:
            _read_line(raw, number, sessions, positions, ids, history.skipped)
        except _BadLine as exc:
            if not skip_bad:
                raise ImportProblem(
                    f"{name} line {exc}; nothing was imported (--skip-bad imports the other lines)"
                ) from None
            history.skipped["bad"] += 1
            history.bad_lines.append(f"line {exc}")
    history.lines = number
    history.sessions = [s for s in sessions.values() if s.messages]
    return history


def _read_line(
    raw: bytes, number: int, sessions: dict[str, ImportedSession], positions: dict[str, int],
    ids: dict[str, set[str]], skipped: Skipped,
) -> None:
    if raw.startswith(UTF8_BOM):
        raw = raw[len(UTF8_BOM):]
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        column = len(raw[: exc.start].decode("utf-8", errors="replace")) + 1
        raise _BadLine(f"{number}: not UTF-8 text (byte 0x{raw[exc.start]:02X} at column {column})") from None
    if not text.strip():
        return
    try:
        record = json.loads(text)
    except json.JSONDecodeError as exc:
        raise _BadLine(f"{number}: not JSON ({exc.msg} at column {exc.colno})") from None
    if not isinstance(record, dict):
        raise _BadLine(f"{number}: not a JSON object but {_kind(record)}")
    key = _session_key(record, number)
    position = positions.get(key, 0)
    positions[key] = position + 1
    role_name = _field(record, number, "role", str).strip().lower()
    if role_name not in ROLES:
        raise _BadLine(f"{number}: field 'role': {record['role']!r} is not a role zeph knows: {KNOWN_ROLES}")
    content = _content(record, number)
    timestamp = _optional_time(record, number)
    external_id = _optional_id(record, number)
    title = record.get("title")
    if title is not None and not isinstance(title, str):
        raise _BadLine(f"{number}: field 'title' is {_kind(title)}, not a string")
    session = sessions.get(key)
    if session is None:
        session = sessions[key] = ImportedSession(SOURCE, key)
    if title and title.strip() and not session.title:
        session.title = title.strip()
    role = ROLES[role_name]
    if role is None:
        skipped[SKIP_REASON[role_name]] += 1
        return
    if not content.strip():
        skipped["empty"] += 1
        return
    if external_id is not None:
        seen = ids.setdefault(key, set())
        if external_id in seen:
            skipped["duplicate"] += 1
            return
        seen.add(external_id)
    session.messages.append(ImportedMessage(role, content, timestamp, external_id, position))


def _kind(value: object) -> str:
    if value is None:
        return "null"
    return {dict: "an object", list: "a list", str: "a string", bool: "a boolean"}.get(type(value), "a number")


def _field(record: dict, number: int, name: str, kind: type) -> Any:
    if name not in record:
        raise _BadLine(f"{number}: no field '{name}'")
    value = record[name]
    if not isinstance(value, kind) or isinstance(value, bool):
        raise _BadLine(f"{number}: field '{name}' is {_kind(value)}, not a string")
    return value


def _session_key(record: dict, number: int) -> str:
    if "session" not in record:
        raise _BadLine(f"{number}: no field 'session'")
    value = record["session"]
    if isinstance(value, bool) or not isinstance(value, (str, int)):
        raise _BadLine(f"{number}: field 'session' is {_kind(value)}, not a string or an integer")
    key = str(value).strip()
    if not key:
        raise _BadLine(f"{number}: field 'session' is empty")
    return key


def _content(record: dict, number: int) -> str:
    """A string, or a list of text parts (strings or `{"type": "text", "text": …}`; others are left out)."""
    if "content" not in record:
        raise _BadLine(f"{number}: no field 'content'")
    value = record["content"]
    if value is None:
        return ""
    if isinstance(value, str):
        return value
    if isinstance(value, list):
        texts = []
        for part in value:
            if isinstance(part, str):
                texts.append(part)
            elif isinstance(part, dict) and part.get("type") == "text" and isinstance(part.get("text"), str):
                texts.append(part["text"])
            elif not isinstance(part, dict):
                raise _BadLine(f"{number}: field 'content' holds {_kind(part)}: parts are strings or objects")
        return "\n".join(texts)
    raise _BadLine(f"{number}: field 'content' is {_kind(value)}, not a string or a list of text parts")


def _optional_time(record: dict, number: int) -> str | None:
    value = record.get("timestamp")
    if value is None:
        return None
    try:
        return parse_time(value)
    except ValueError as exc:
        raise _BadLine(f"{number}: field 'timestamp': {exc}") from None


def _optional_id(record: dict, number: int) -> str | None:
    value = record.get("id")
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (str, int)):
        raise _BadLine(f"{number}: field 'id' is {_kind(value)}, not a string or an integer")
    text = str(value).strip()
    if not text:
        raise _BadLine(f"{number}: field 'id' is empty")
    return text
