"""Lines for standard error: progress, warnings and errors of the command line.

Invariant: stdlib only (the CLI imports it at start-up); each call writes one
whole line and flushes it, so it interleaves correctly with the reply on stdout.
"""

from __future__ import annotations

import sys


def eprint(text: str) -> None:
    print(text, file=sys.stderr, flush=True)


def warning_line(text: str) -> str:
    """`zeph: warning: …` (a warning already worded "Warning: …" is not said twice)."""
    return "zeph: warning: " + text.removeprefix("Warning: ")
