"""Writing a file whole or not at all.

Invariant: a reader of `path` sees its old content or the new one, never part of
it: the payload goes to a temporary file beside it, which replaces `path` only
once written; on any failure the temporary file is removed and the error raised.
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path


def write_atomically(path: Path, payload: bytes) -> None:
    fd, temp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(payload)
        os.replace(temp, path)
    except BaseException:
        try:
            os.unlink(temp)
        except OSError:
            pass
        raise
