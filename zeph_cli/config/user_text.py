"""Reading a text file the user supplies: project context (ZEPH.md…), a prompt module override, a prompt
profile, a skill.

Invariant: `read_user_text(path, max_bytes)` returns the whole file as text, or raises `UnusableText` whose
`reason` is a phrase that reads after the path: "larger than N bytes", "not valid UTF-8", "binary (contains
NUL bytes)", "cannot be read (why)". At most `max_bytes` + 1 bytes are read, whatever the file's size.
"""

from __future__ import annotations

from pathlib import Path


class UnusableText(Exception):
    """Why a user's text file cannot be used (`reason`, to follow its path)."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


def read_user_text(path: Path, max_bytes: int) -> str:
    try:
        with path.open("rb") as file:
            data = file.read(max_bytes + 1)
    except OSError as exc:
        raise UnusableText(f"cannot be read ({exc.strerror or exc})") from None
    if len(data) > max_bytes:
        raise UnusableText(f"larger than {max_bytes:,} bytes")
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        raise UnusableText("not valid UTF-8") from None
    if "\x00" in text:
        raise UnusableText("binary (contains NUL bytes)")
    return text
