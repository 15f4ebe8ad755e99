"""Reading a file the user attaches to a prompt (`zeph ask -a`, `/attach` in the chat app).

Invariant: a file is attached only when the file tools could read it (inside
the workspace or `tools.allowed_paths`, not hidden: secret stores, zeph's own
files, `[tools.sandbox] deny_read`), it is a regular text file (or a PNG, JPEG,
GIF or WebP image, read as an image part), and it takes at most
`attachment_limit` of the prompt budget; anything else is an
`AttachmentError`, one line naming the file and what to do instead.
"""

from __future__ import annotations

import base64
import os
import stat
from pathlib import Path

from ..context.attachments import Attachment, attachment_limit
from ..errors import UsageError
from ..images import MAX_IMAGE_BYTES, sniff_type
from ..messages import ImagePart
from ..tokens import TokenCounter
from ..tools.base import ToolContext
from ..tools.confinement import Confinement
from ..tools.failures import PathOutsideWorkspace
from ..tools.text_files import SNIFF_BYTES, binary_kind, count_lines, decode, human_size, missing, shown

BYTES_PER_TOKEN_AT_MOST = 16  # a file this many bytes per token of the limit is refused before it is read


class AttachmentError(UsageError):
    """A file that cannot be attached; the message names it."""


def read_attachment(raw: str, confinement: Confinement, cwd: Path, counter: TokenCounter, prompt_budget: int) -> Attachment:
    """The file `raw` names (relative to `cwd`), read for attaching within a prompt budget of `prompt_budget` tokens."""
    context = ToolContext(confinement=confinement, cwd=cwd)
    try:
        path = confinement.resolve(raw, cwd)
    except PathOutsideWorkspace as exc:
        advice = "; list its directory in [tools] allowed_paths to attach it" if " is outside " in str(exc) else ""
        raise AttachmentError(f"cannot attach: {exc}{advice}") from None
    name = shown(path, context)
    try:
        info = os.stat(path)
    except (FileNotFoundError, NotADirectoryError):
        raise AttachmentError(f"cannot attach {name}: it {missing(path, context).removeprefix(name + ' ')}") from None
    except OSError as exc:
        raise AttachmentError(f"cannot attach {name}: {exc.strerror or exc}") from None
    if stat.S_ISDIR(info.st_mode):
        raise AttachmentError(f"cannot attach {name}: it is a directory; attach the files in it one by one")
    if not stat.S_ISREG(info.st_mode):
        raise AttachmentError(f"cannot attach {name}: it is not a regular file")
    limit = attachment_limit(prompt_budget)
    advice = (f"more than an attachment may take (a quarter of the {prompt_budget:,}-token prompt budget: {limit:,}); "
              "ask the agent to read it with read_file (offset/limit) instead, or raise [memory] context_budget_tokens")
    # an image's bytes say nothing of its tokens: it may be as large as a model takes an image
    cap = MAX_IMAGE_BYTES if _starts_as_image(path) else limit * BYTES_PER_TOKEN_AT_MOST
    if info.st_size > cap:
        raise AttachmentError(f"cannot attach {name}: it is {human_size(info.st_size)}, {advice}")
    try:
        data = path.read_bytes()
    except PermissionError:
        raise AttachmentError(f"cannot attach {name}: permission denied") from None
    except OSError as exc:
        raise AttachmentError(f"cannot attach {name}: {exc.strerror or exc}") from None
    image_type = sniff_type(data[:SNIFF_BYTES])
    if image_type is not None:  # counted by the caller, which knows whether the model takes images
        return Attachment(name, "", 0, 0, ImagePart(image_type, base64.b64encode(data).decode("ascii")))
    kind = binary_kind(data[:SNIFF_BYTES])
    if kind is not None:
        raise AttachmentError(f"cannot attach {name}: it is a binary file ({kind}, {len(data):,} bytes); "
                              "only text files can be attached")
    text, _ = decode(data)
    tokens = counter.count(text)
    if tokens > limit:
        raise AttachmentError(f"cannot attach {name}: it is {tokens:,} tokens, {advice}")
    return Attachment(name, text, count_lines(text), tokens)


def _starts_as_image(path: Path) -> bool:
    """Whether the file begins as a PNG, JPEG, GIF or WebP image (False when it cannot be read: reading it
    again says why)."""
    try:
        with open(path, "rb") as file:
            return sniff_type(file.read(16)) is not None
    except OSError:
        return False
