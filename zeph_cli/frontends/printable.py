"""Text from a server or a model made safe for a terminal.

Invariant: `printable` keeps every character but the control characters (C0 but tab and newline, DEL, C1),
which it shows as `?`: an escape sequence in a server's message cannot move the cursor, retitle or clear
the terminal, or forge lines.
"""

from __future__ import annotations

CONTROL = dict.fromkeys([*range(9), *range(11, 32), 127, *range(128, 160)], "?")  # all but \t and \n


def printable(text: str) -> str:
    return text.translate(CONTROL)
