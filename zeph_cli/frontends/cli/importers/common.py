"""What the history readers share: role names, times, what was skipped, and the error for bad input.

Invariant: pure (no I/O). A time is returned in the store's format (UTC, ISO 8601 with
microseconds), so imported and native messages order alike by their `created_at` text.
"""

from __future__ import annotations

from collections import Counter
from datetime import datetime, UTC

from ....errors import ZephError

# The roles a source may name, and what zeph keeps them as (None: left out, counted under that name).
ROLES: dict[str, str | None] = {
    "user": "user", "human": "user",
    "assistant": "assistant", "ai": "assistant", "bot": "assistant", "model": "assistant", "gpt": "assistant",
    "system": None, "developer": None,
    "tool": None, "function": None, "ipython": None,
}
SKIP_REASON = {"system": "system", "developer": "system", "tool": "tool", "function": "tool", "ipython": "tool"}
KNOWN_ROLES = "user, assistant (system and tool messages are skipped)"


class ImportProblem(ZephError):
    """A line or row of the source that cannot be imported, named with where it is and which field."""


class Skipped(Counter):
    """What an import left out, by reason: system, tool, empty, duplicate id, bad line."""

    def describe(self) -> str:
        names = {"system": "system message", "tool": "tool message", "empty": "empty message",
                 "duplicate": "repeated id", "bad": "bad line"}
        parts = []
        for reason, count in sorted(self.items(), key=lambda item: -item[1]):
            if count:
                noun = names.get(reason, reason)
                parts.append(f"{count:,} {noun}{'' if count == 1 else 's'}")
        return ", ".join(parts)


def store_time(moment: datetime) -> str:
    """`moment` in the store's format; a time without an offset is taken as UTC."""
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    return moment.astimezone(UTC).isoformat(timespec="microseconds")


def parse_time(value: object) -> str:
    """An ISO 8601 time (a date alone is its midnight) or Unix seconds, in the store's format;
    ValueError saying what was wrong."""
    if isinstance(value, bool):
        raise ValueError(f"{value!r} is not a time")
    if isinstance(value, (int, float)):
        try:
            return store_time(datetime.fromtimestamp(value, UTC))
        except (OverflowError, OSError, ValueError):
            raise ValueError(f"{value!r} is out of range as Unix seconds") from None
    if not isinstance(value, str):
        raise ValueError(f"a {type(value).__name__} is not a time")
    text = value.strip()
    try:
        return store_time(datetime.fromisoformat(text))
    except ValueError:
        raise ValueError(f"{value!r} is not an ISO 8601 time (for example 2024-05-08T13:56:00Z)") from None
