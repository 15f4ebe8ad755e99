"""Editing a text in the user's editor: `$VISUAL`, else `$EDITOR`, else `vi` on a terminal.

Invariant: the edited text comes back only when the editor exits with status 0; otherwise a
`ZephError` says what stays unchanged. Without an editor and without a terminal, a `UsageError`
names the way around it. The text lives in a private temporary folder that is removed after.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
from pathlib import Path

from ...errors import UsageError, ZephError


def editor_command(instead: str) -> list[str]:
    """The editor to run (a shell runs `$VISUAL`/`$EDITOR`, so they may carry arguments)."""
    command = os.environ.get("VISUAL") or os.environ.get("EDITOR")
    if command:
        return ["/bin/sh", "-c", f'{command} "$@"', command]
    if not sys.stdin.isatty():
        raise UsageError(f"no editor: set $EDITOR (or $VISUAL), or {instead}")
    return ["vi"]


def edit_in_editor(content: str, *, filename: str, unchanged: str, instead: str) -> str:
    """`content` as the user left it in the editor; `unchanged` names what a failed edit leaves as it was."""
    command = editor_command(instead)
    with tempfile.TemporaryDirectory(prefix="zeph-edit-") as folder:
        path = Path(folder) / filename
        path.write_text(content, encoding="utf-8")
        try:
            status = subprocess.call([*command, str(path)])
        except OSError as exc:
            raise ZephError(f"cannot start the editor {command[-1]!r}: {exc.strerror or exc}") from None
        if status != 0:
            raise ZephError(f"the editor exited with status {status}; {unchanged} is unchanged")
        return path.read_text(encoding="utf-8")
