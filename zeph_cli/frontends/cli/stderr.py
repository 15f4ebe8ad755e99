"""Lines for standard error: progress, warnings and errors of the command line.

Invariant: stdlib only (the CLI imports it at start-up); each call writes one
whole line and flushes it, so it interleaves correctly with the reply on stdout.
The one exception is the status line (`show_status`, a terminal only): it is
rewritten in place and cleared before anything else is written to standard error
through this module (or by a terminal question, which calls `clear_status`).
"""

from __future__ import annotations

import shutil
import sys

from ..printable import printable

_status_shown = False  # a status line is on the terminal, with no newline after it


def eprint(text: str) -> None:
    clear_status()
    print(printable(text), file=sys.stderr, flush=True)  # server and model words among it: no escape sequences


def warning_line(text: str) -> str:
    """`zeph: warning: …` (a warning already worded "Warning: …" is not said twice)."""
    return "zeph: warning: " + text.removeprefix("Warning: ")


def show_status(text: str) -> None:
    """Write `text` over the status line (one terminal row: cut to the width); the caller checked that
    standard error is a terminal."""
    global _status_shown
    width = shutil.get_terminal_size((80, 24)).columns
    if len(text) >= width:
        text = text[: max(width - 2, 1)] + "…"
    sys.stderr.write("\r\033[K" + printable(text))
    sys.stderr.flush()
    _status_shown = True


def clear_status() -> None:
    """Take the status line off the terminal, if one is shown."""
    global _status_shown
    if _status_shown:
        _status_shown = False
        sys.stderr.write("\r\033[K")
        sys.stderr.flush()
