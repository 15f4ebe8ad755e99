"""The exit status of a stdio MCP server, which the SDK's stdio client keeps to itself.

On POSIX the server runs under `/bin/sh`, which waits for it, appends one line with its status to the
server's log (its stderr) and exits with the same status. The SDK sees `sh`, in the server's own process
group, so its shutdown (stdin closed, then the group signalled) reaches the server as before.

Invariant: the server gets exactly the configured command, arguments, environment and working directory
(and the `PWD` a shell sets); an environment with a name a POSIX shell may drop (`FOO-BAR`, `A.B`) and a
command that cannot be found are not wrapped (the SDK's error names it, as without the wrapper); outside
POSIX nothing is wrapped and the status is unknown (None). The status line is written only after the
server's own last line, so the line before it is still the server's last words.
"""

from __future__ import annotations

import os
import re
import shutil
from collections.abc import Mapping
from pathlib import Path

MARK = "[zeph] the server exited with status "
_SCRIPT = f'"$0" "$@"; status=$?; echo "{MARK}$status" >&2; exit $status'
_STATUS = re.compile(re.escape(MARK) + r"(\d+)\s*$")
_SHELL_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


def wrapped(command: str, args: list[str], env: Mapping[str, str] | None) -> tuple[str, list[str]]:
    """The command and arguments to start, so that the server's exit status reaches its log."""
    path = (env or {}).get("PATH", os.environ.get("PATH"))
    if os.name != "posix" or not os.path.exists("/bin/sh") or shutil.which(command, path=path) is None:
        return command, args
    if any(not _SHELL_NAME.fullmatch(name) for name in env or {}):
        return command, args  # a shell would drop it: the server's environment comes first, its status second
    return "/bin/sh", ["-c", _SCRIPT, command, *args]


def is_mark(line: str) -> bool:
    return line.strip().startswith(MARK)


def read(log_path: Path | None, start: int) -> int | None:
    """The status in the last status line of the log past `start` (None: none written there)."""
    if log_path is None:
        return None
    try:
        with open(log_path, "rb") as log:
            log.seek(start)
            written = log.read()[-8192:].decode("utf-8", "replace")
    except OSError:
        return None
    for line in reversed(written.splitlines()):
        match = _STATUS.match(line.strip())
        if match:
            return int(match.group(1))
    return None
