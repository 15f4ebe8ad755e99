"""Standard output after its reader has gone (a closed pipe, as in `zeph ask … | head`).

Invariant: once `drop_further_output()` has run, every later write and flush to
standard output succeeds and goes nowhere — the rest of the command and the
process's exit print no error about it — because the descriptor now points at
the null device (what Python's documentation advises instead of SIGPIPE).
"""

from __future__ import annotations

import os
import sys


def drop_further_output() -> None:
    """From now on, what is written to standard output is dropped."""
    try:
        null = os.open(os.devnull, os.O_WRONLY)
        try:
            os.dup2(null, sys.stdout.fileno())
        finally:
            os.close(null)
    except (OSError, ValueError):  # no descriptor to point anywhere (closed, or not a real file)
        pass
