"""History before budget trimming: the `max_chat_history` cap and time landmarks; blocks placed at a depth.

Invariant: pure and deterministic (timestamps come from the stored messages,
the zone is an argument). The cap keeps the newest messages and never splits a
tool call from its results nor drops the running turn; a landmark is a short
`context` message put before a user message that comes more than `gap` after
the previous user message, and is never the reason a message is cut. A block at depth N
goes N messages from the end of the history, never between a tool call and its results.
"""

from __future__ import annotations

from datetime import datetime, timedelta, tzinfo, UTC
from collections.abc import Sequence
from typing import TypeVar

from ..messages import Message

LANDMARK_KEY = "time_landmark"  # metadata marking a landmark item

Item = TypeVar("Item")


def cap_history(groups: list[list[Item]], limit: int, keep_from: int | None = None) -> tuple[list[Item], int]:
    """The newest whole groups holding at most `limit` messages (0 = no cap); return (kept, dropped count).

    The newest group, and every group from item index `keep_from` on (the running turn), is always kept."""
    flat = [i for g in groups for i in g]
    if limit <= 0:
        return flat, 0
    kept: list[list[Item]] = []
    count = 0
    start = len(flat)
    for group in reversed(groups):
        start -= len(group)
        must = not kept or (keep_from is not None and start >= keep_from)
        if not must and count + len(group) > limit:
            break
        kept.append(group)
        count += len(group)
    items = [i for g in reversed(kept) for i in g]
    return items, len(flat) - len(items)


def parse_stamp(stamp: str) -> datetime | None:
    """A stored `created_at` as an aware datetime (naive ones are UTC); None when absent or unreadable."""
    if not stamp:
        return None
    try:
        moment = datetime.fromisoformat(stamp)
    except ValueError:
        return None
    return moment if moment.tzinfo else moment.replace(tzinfo=UTC)


def describe_gap(gap: timedelta) -> str:
    """"3 h later", "2 days later", "45 min later"."""
    minutes = int(gap.total_seconds() // 60)
    if minutes >= 2 * 24 * 60:
        return f"{minutes // (24 * 60)} days later"
    if minutes >= 60:
        return f"{minutes // 60} h later"
    return f"{minutes} min later"


def landmark_text(moment: datetime, gap: timedelta, zone: tzinfo | None) -> str:
    local = moment.astimezone(zone) if zone is not None else moment
    return f"[time: {local:%Y-%m-%d %H:%M}, {describe_gap(gap)}]"


def landmarks(stamps: list[tuple[str, str]], gap_minutes: int, zone: tzinfo | None) -> dict[int, str]:
    """For (role, created_at) pairs in order: index → landmark text, for each user message that comes
    more than `gap_minutes` after the previous user message (0 = none)."""
    if gap_minutes <= 0:
        return {}
    limit = timedelta(minutes=gap_minutes)
    found: dict[int, str] = {}
    previous: datetime | None = None
    for index, (role, stamp) in enumerate(stamps):
        if role != "user":
            continue
        moment = parse_stamp(stamp)
        if moment is None:
            continue
        if previous is not None and moment - previous > limit:
            found[index] = landmark_text(moment, moment - previous, zone)
        previous = moment
    return found


def depth_index(messages: Sequence[Message], depth: int, floor: int = 0) -> int:
    """Where a block `depth` messages from the end of `messages` goes (an index to insert at), never
    before `floor` (the history's start) and never between a tool call and its results: when the spot
    would split them it moves to the nearest boundary (the later one on a tie)."""
    end = len(messages)
    target = min(max(end - max(depth, 0), floor), end)

    def boundary(index: int) -> bool:
        return floor <= index <= end and (index == end or messages[index].role != "tool")

    for step in range(end + 1):
        for index in (target + step, target - step):
            if boundary(index):
                return index
    return end


def insert_at_depth(messages: Sequence[Message], blocks: Sequence[tuple[int, str]], floor: int = 0) -> list[Message]:
    """`messages` (summaries and history) with each `(depth, text)` block inserted as a `context` message;
    depths count the history's messages only (not the blocks inserted), deeper blocks come first."""
    out = list(messages)
    spots = [(depth_index(messages, depth, floor), depth, text) for depth, text in blocks]
    # from the end backwards, so each index still points where it was computed; at one index the
    # shallower block goes in first and the deeper one before it
    for index, _, text in sorted(spots, key=lambda s: (s[0], -s[1]), reverse=True):
        out.insert(index, Message.context(text))
    return out
