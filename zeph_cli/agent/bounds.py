"""Token-bound settling: exact counts only where a deferred counter's bounds could decide otherwise.

Invariant: every decision taken under a counter that gives bounds is the one exact
counts would take. `settle_bounds` runs the decision under the lower and then the
upper bound; when both agree, exact counts (which lie between them) agree too and the
encoding is never built; when they disagree, or the decision asks for `NEEDS_EXACT`,
the counter is made exact. A counter that counts exactly is left alone. Compaction,
a budget problem and a report's notes (their figures are the user's) always ask for
exact counts.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from ..context.compaction.provisional import due as provisional_summary_due
from ..context.compaction.tiers import may_compact
from ..tokens import LOWER, NEEDS_EXACT, UPPER, TokenCounter, bounded

if TYPE_CHECKING:
    from ..config import MemoryConfig
    from ..context.assembler import HistoryItem
    from ..context.report import ContextReport


def settle_bounds(counter: TokenCounter, decide: Callable[[], object]) -> None:
    """Make `counter` exact where its bounds could decide `decide()` otherwise than exact counts.

    `decide()` runs under a deferred counter's lower and then upper bound; when both give the same
    outcome, exact counts, which lie between them, give it too, and the encoding is never built.
    An outcome of `NEEDS_EXACT` always asks for exact counts."""
    if not bounded(counter):
        return
    outcomes = []
    for mode in (LOWER, UPPER):
        with counter.bounds(mode):
            outcomes.append(decide())
        if outcomes[-1] is NEEDS_EXACT:
            break
    if outcomes[-1] is NEEDS_EXACT or outcomes[0] != outcomes[1]:
        counter.make_exact()


def provisional_due(history: list[HistoryItem]) -> bool:
    """Whether a provisional compaction summary waits for its redo (the compactor's to do)."""
    return provisional_summary_due(history) is not None


def compaction_may_act(
    memory: MemoryConfig, report: ContextReport, provisional_due: bool, *, compactor_built: bool
) -> bool:
    """Whether the compactor could act before this request; when not, it is not even built (imported)."""
    if compactor_built:
        return True  # built already: it keeps state across requests, let it decide
    proactive = memory.compression.threshold_tokens if memory.compression.strategy == "proactive" else None
    return may_compact(
        report.context_tokens, report.capacity, soft=memory.soft_compaction_threshold,
        hard=memory.hard_compaction_threshold, proactive_threshold=proactive,
        provisional_due=provisional_due,
    )
