"""Notices said once per data dir (on the first run that meets them), not on every run.

Invariant: `first_time(notice)` is true for the call that records `notice` as a marker file under
`data_dir/said/` and false for every later call with the same text; when the marker cannot be written the
notice is said (an unwritable data dir repeats a notice rather than losing it). The text names what it is
about (provider, model, reason), so a different reason is a different notice.
"""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

from ..paths import data_dir

SAID_DIR = "said"


def first_time(notice: str, directory: Path | None = None) -> bool:
    folder = (directory if directory is not None else data_dir()) / SAID_DIR
    marker = folder / hashlib.sha256(notice.encode("utf-8")).hexdigest()[:32]
    try:
        folder.mkdir(parents=True, exist_ok=True)
        fd = os.open(marker, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o644)
    except FileExistsError:
        return False
    except OSError:
        return True
    with os.fdopen(fd, "w", encoding="utf-8") as out:
        out.write(notice + "\n")
    return True
