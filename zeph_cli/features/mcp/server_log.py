"""A server's own log messages (MCP `notifications/message`): the line written to `mcp/ID.log`, and the few
that become warnings for the user.

Invariant: a message below the server's `log_level` is never written or shown (servers filter too, but not
all of them). Every message at or above it is one line `LEVEL logger: text` in the server's log file (the file
its stderr goes to). Of those at warning or above, at most `NOTICES_PER_TURN` per server become warnings
in a turn (between two `take()`s that start one); the rest are counted and said in one line pointing at the
log. A tool call takes what arrived during it without starting a new turn (`take(new_turn=False)`).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from ...config.mcp import LOG_LEVELS

NOTICES_PER_TURN = 3
NOTICE_LEVEL = "warning"
MAX_TEXT = 500  # characters of one message in a warning (the log file keeps it whole)


def severity(level: str) -> int:
    """The level's rank, least severe first (an unknown level counts as the most severe)."""
    return LOG_LEVELS.index(level) if level in LOG_LEVELS else len(LOG_LEVELS)


def message_text(logger: str | None, data: Any) -> str:
    """`logger: data` on one line (data that is not text as compact JSON)."""
    text = data if isinstance(data, str) else json.dumps(data, ensure_ascii=False, separators=(",", ":"), default=str)
    text = " ".join(text.split())
    return f"{logger}: {text}" if logger else text


def append_line(path: Path, level: str, text: str) -> None:
    """One `LEVEL text` line at the end of the server's log; a log that cannot be written is skipped."""
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        with open(path, "a", encoding="utf-8") as log:
            log.write(f"{level.upper()} {text}\n")
    except OSError:
        pass


class LogNotices:
    """Servers' warnings and errors, queued for the user, at most `NOTICES_PER_TURN` per server per turn."""

    def __init__(self) -> None:
        self._queued: list[str] = []
        self._shown: dict[str, int] = {}
        self._held: dict[str, int] = {}

    def add(self, server_id: str, level: str, text: str) -> None:
        if severity(level) < severity(NOTICE_LEVEL):
            return
        if self._shown.get(server_id, 0) >= NOTICES_PER_TURN:
            self._held[server_id] = self._held.get(server_id, 0) + 1
            return
        self._shown[server_id] = self._shown.get(server_id, 0) + 1
        short = text if len(text) <= MAX_TEXT else text[: MAX_TEXT - 1] + "…"
        self._queued.append(f"MCP server {server_id} {level}: {short}")

    def take(self, *, new_turn: bool = True) -> list[str]:
        """The queued warnings, then one line per server whose further messages were held back since the last
        take; `new_turn` starts counting each server's warnings again."""
        out = self._queued + [
            f"MCP server {server_id}: {n} more log message{'s' if n != 1 else ''} in mcp/{server_id}.log"
            for server_id, n in self._held.items()
        ]
        self._queued, self._held = [], {}
        if new_turn:
            self._shown = {}
        return out
