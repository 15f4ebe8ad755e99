"""The `zeph` program's entry point.

Invariant: Ctrl+C at any moment of a run ends it with exit code 130 and no traceback, also while
the command line itself is still being imported (a tenth of a second, before `cli.main` can catch
anything). This module imports nothing but `sys` before the command line.
"""

from __future__ import annotations

import sys


def main() -> None:
    try:
        from .app import main as run_command_line

        run_command_line()
    except KeyboardInterrupt:  # before or around the command's own handling, which says "interrupted"
        sys.exit(130)
