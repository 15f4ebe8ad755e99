"""Provisional summaries: made without the summarizer, redone from their originals once it answers.

Invariant: pure. When to ask the summarizer again lives in the summary's own
metadata (a number of user turns, counted after a message id), so it holds
across processes; the wait doubles with every failure, up to
REDO_MAX_WAIT_TURNS; expanding provisional summaries into their originals never
grows a range past its token limit.
"""

from __future__ import annotations

from collections.abc import Callable

from ..assembler import HistoryItem
from .markers import COMPACTION_SUMMARY

PROVISIONAL = "provisional"  # on a summary made while the summarizer was down
REDO_WAIT = "redo_wait_turns"  # user turns to wait before asking the summarizer again
REDO_FROM = "redo_counted_after"  # message id the wait is counted from
REDO_MAX_WAIT_TURNS = 32


def is_provisional(item: HistoryItem) -> bool:
    return bool(item.metadata.get(PROVISIONAL))


def first_schedule(middle: list[HistoryItem], cooldown_turns: int, newest_id: int) -> dict:
    """Metadata of a new provisional summary of `middle`: wait `cooldown_turns` user turns (at least 1),
    or twice as long as an earlier provisional summary it takes in waited (the summarizer failed again)."""
    earlier = [item.metadata.get(REDO_WAIT, 0) for item in middle if is_provisional(item)]
    wait = max(cooldown_turns, 1)
    if earlier:
        wait = min(max(max(earlier) * 2, wait), REDO_MAX_WAIT_TURNS)
    return {PROVISIONAL: True, REDO_WAIT: wait, REDO_FROM: newest_id}


def retry_schedule(summary: HistoryItem, newest_id: int) -> dict:
    """The metadata update after the summarizer failed again: twice the wait, counted from now."""
    return {REDO_WAIT: min(summary.metadata.get(REDO_WAIT, 1) * 2, REDO_MAX_WAIT_TURNS), REDO_FROM: newest_id}


def due(history: list[HistoryItem]) -> HistoryItem | None:
    """The newest provisional summary in `history`, when its wait is over."""
    summary = next((i for i in reversed(history) if i.metadata.get(COMPACTION_SUMMARY) and is_provisional(i)), None)
    if summary is None:
        return None
    since = summary.metadata.get(REDO_FROM, summary.id)
    turns = sum(1 for item in history if item.id > since and item.message.role == "user")
    return summary if turns >= summary.metadata.get(REDO_WAIT, 1) else None


def expand(
    items: list[HistoryItem], originals: Callable[[HistoryItem], list[HistoryItem]], limit: int
) -> list[HistoryItem]:
    """`items` with provisional summaries replaced by their originals (and theirs, while the summarizer
    stayed down), newest first, while the whole stays within `limit` tokens: a summary made while the
    summarizer answers is made from what was said, not only from the sentences a provisional one kept."""
    out = list(items)
    total = sum(item.tokens for item in out)
    index = len(out) - 1
    while index >= 0:
        item = out[index]
        found = originals(item) if is_provisional(item) else []
        grown = total - item.tokens + sum(o.tokens for o in found)
        if found and grown <= limit:
            out[index:index + 1] = found
            total = grown
            index += len(found)  # look inside them too (a provisional summary it took in)
        index -= 1
    return out
