"""Asking the user on the terminal whether a write or exec tool call may run.

Invariant: presentation only. The question goes to the terminal (stderr, or
/dev/tty when standard input is a pipe) and the answer is read without
blocking the event loop, so Ctrl+C during the question cancels the turn like
anywhere else. Anything but y/yes/a/always is a no.
"""

from __future__ import annotations

import asyncio
import os
import sys
from typing import TextIO

from .stderr import clear_status
from ...tools.approval import ApprovalDecision, ApprovalRequest

MAX_PREVIEW_LINES = 60
SHOWN_SUBJECT_CHARS = 100  # what the "⏺ tool subject" line shows in full


class TerminalApprover:
    def __init__(self, in_fd: int, out: TextIO, *, owns_fd: bool = False) -> None:
        self.in_fd = in_fd
        self.out = out
        self.owns_fd = owns_fd
        self.asking = asyncio.Lock()  # one question at a time: an approval, or a server's form (elicit_prompt)

    @classmethod
    def open(cls) -> "TerminalApprover | None":
        """An approver on the user's terminal, or None when there is no terminal to ask on."""
        try:
            if sys.stdin is not None and sys.stdin.isatty():
                return cls(sys.stdin.fileno(), sys.stderr)
            if sys.stderr is not None and sys.stderr.isatty():
                fd = os.open("/dev/tty", os.O_RDWR | os.O_NOCTTY)
                return cls(fd, os.fdopen(os.dup(fd), "w", encoding="utf-8", errors="replace"), owns_fd=True)
        except (OSError, ValueError):
            return None
        return None

    def close(self) -> None:
        _leftover.pop(self.in_fd, None)
        if self.owns_fd:
            try:
                os.close(self.in_fd)
                self.out.close()
            except OSError:
                pass

    async def __call__(self, request: ApprovalRequest) -> ApprovalDecision:
        async with self.asking:
            clear_status()  # a running tool's progress line
            self.out.write(render_question(request))
            self.out.flush()
            answer = (await read_line(self.in_fd)).strip().lower()
        if answer in ("y", "yes"):
            return ApprovalDecision("yes")
        if answer in ("a", "always"):
            return ApprovalDecision("always")
        return ApprovalDecision("no", "the user answered no")


def render_question(request: ApprovalRequest) -> str:
    verb = {"exec": "Run", "write": "Write"}.get(request.kind, "Use")
    lines: list[str] = [f"  asked by sub-agent: {request.asker}"] if request.asker else []
    if request.tool == "bash":
        if len(request.subject) > SHOWN_SUBJECT_CHARS or "\n" in request.subject:  # the tool line cut it short
            lines.extend("  $ " + line for line in request.subject.splitlines())
    elif request.preview:
        preview = request.preview.splitlines()
        lines.extend("  " + line for line in preview[:MAX_PREVIEW_LINES])
        if len(preview) > MAX_PREVIEW_LINES:
            lines.append(f"  … {len(preview) - MAX_PREVIEW_LINES} more lines")
    lines.append(f"{verb} with {request.tool}? [y]es / [N]o / [a]lways {request.tool} in this command: ")
    return "\n".join(lines)


async def read_line(fd: int) -> str:
    """One line from `fd`, read as the event loop sees data arrive (EOF reads as empty)."""
    return await read_line_or_end(fd) or ""


_leftover: dict[int, bytes] = {}  # what a read brought after the line it was for (typed ahead, pasted)


async def read_line_or_end(fd: int) -> str | None:
    """One line from `fd` without its newline, read as the event loop sees data arrive; None at the end of
    input with nothing read (an empty line is ""). What comes after the line is kept for the next call."""
    buffer = bytearray(_leftover.pop(fd, b""))
    if b"\n" in buffer:
        line, rest = bytes(buffer).split(b"\n", 1)
        if rest:
            _leftover[fd] = rest
        return line.decode("utf-8", errors="replace")
    loop = asyncio.get_running_loop()
    done: asyncio.Future[bytes | None] = loop.create_future()

    def readable() -> None:
        try:
            data = os.read(fd, 4096)
        except BlockingIOError:
            return
        except OSError:
            data = b""
        if done.done():
            return
        if not data:
            done.set_result(bytes(buffer) if buffer else None)
            return
        buffer.extend(data)
        if b"\n" in buffer:
            line, rest = bytes(buffer).split(b"\n", 1)
            if rest:
                _leftover[fd] = rest
            done.set_result(line)

    loop.add_reader(fd, readable)
    try:
        read = await done
    finally:
        loop.remove_reader(fd)
    return None if read is None else read.decode("utf-8", errors="replace")
