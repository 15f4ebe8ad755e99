"""Attachments: files the user adds to a prompt, as delimited blocks before the prompt's text.

Invariant: pure text. A block is `<attachment path="…" lines="N">`, the file's
N lines, then `</attachment>`; `split_attachments` reads back exactly what
`with_attachments` wrote (the line count, not a search for the closing tag,
ends a block, so a file that contains the tag reads back whole). The
attachments of one prompt take at most a quarter of the prompt budget
together. An image attachment (for a model that takes images) has no block:
it goes as an image part of the prompt's message.
"""

from __future__ import annotations

import html
import re
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ..messages import ImagePart

ATTACHMENT_SHARE = 4  # an attachment may take 1/4 of the prompt budget
CLOSE = "</attachment>"
_OPEN = re.compile(r'<attachment path="([^"]*)" lines="(\d+)">')


@dataclass(frozen=True)
class Attachment:
    """A text file as attached: its path as the user sees it, its text and size (or an image, `image`)."""
    path: str
    text: str
    lines: int
    tokens: int
    image: ImagePart | None = None


@dataclass(frozen=True)
class AttachedFile:
    """What a stored prompt says of one attachment (for a collapsed view)."""
    path: str
    lines: int


def attachment_limit(prompt_budget: int) -> int:
    """The most tokens one attachment may take, for a prompt budget of `prompt_budget` tokens."""
    return max(prompt_budget // ATTACHMENT_SHARE, 1)


def over_limit(attachments: list[Attachment], prompt_budget: int) -> str | None:
    """Why the attachments of one prompt are too large together (None: they fit)."""
    total, limit = sum(a.tokens for a in attachments), attachment_limit(prompt_budget)
    if len(attachments) < 2 or total <= limit:
        return None
    return (f"the {len(attachments)} attached files take {total:,} tokens together, more than a prompt's attachments "
            f"may take (a quarter of the {prompt_budget:,}-token prompt budget: {limit:,}); attach fewer, or raise "
            "[memory] context_budget_tokens")


def attachment_block(attachment: Attachment) -> str:
    body = attachment.text if not attachment.text or attachment.text.endswith("\n") else attachment.text + "\n"
    return f'<attachment path="{html.escape(attachment.path)}" lines="{body.count(chr(10))}">\n{body}{CLOSE}'


def with_attachments(attachments: list[Attachment], text: str) -> str:
    """The prompt as stored and sent: each attachment's block, then the user's text (images go apart)."""
    attachments = [a for a in attachments if a.image is None]
    if not attachments:
        return text
    return "\n".join(attachment_block(a) for a in attachments) + "\n\n" + text


def split_attachments(content: str) -> tuple[list[AttachedFile], str]:
    """The attachments a stored prompt starts with, and the text the user typed after them."""
    found: list[AttachedFile] = []
    rest = content
    while True:
        header, newline, after = rest.partition("\n")
        match = _OPEN.fullmatch(header)
        if match is None or not newline:
            break
        count = int(match.group(2))
        lines = after.split("\n", count)
        if len(lines) <= count or not lines[count].startswith(CLOSE):
            break  # not a block this module wrote: the text as it is
        found.append(AttachedFile(html.unescape(match.group(1)), count))
        rest = lines[count].removeprefix(CLOSE).removeprefix("\n")
    if not found:
        return [], content
    return found, rest.removeprefix("\n")


def attached_line(files: list[AttachedFile]) -> str:
    """One line naming the attached files (what a transcript shows instead of their text)."""
    return "📎 " + ", ".join(f"{f.path} ({f.lines:,} line{'' if f.lines == 1 else 's'})" for f in files)
