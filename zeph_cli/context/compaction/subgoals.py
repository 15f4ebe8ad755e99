"""Subgoals: the task items a long task works through, as compaction sees them.

Invariant: pure values. A `Subgoal` is one task item's range of stored messages and its state; the
task list (`features/tasks`) records them, and hard compaction reads them to keep active ranges whole
and compact completed and abandoned ones first.
"""

from __future__ import annotations

from typing import NamedTuple

ACTIVE, COMPLETED, ABANDONED = "active", "completed", "abandoned"


class Subgoal(NamedTuple):
    """One task item's messages: ids `first_id` through `last_id` (inclusive; None = still open, up to the
    newest message) were written while it was in progress."""

    item_id: str
    text: str
    state: str  # ACTIVE | COMPLETED | ABANDONED
    first_id: int
    last_id: int | None = None
