"""When to compact: the reactive soft/hard tiers, proactive compression, and one LLM compaction a turn.

Invariant: pure decisions on token counts; a zero budget means no compaction,
thresholds are exceeded strictly ("exceeds"), and after a compaction this turn
reactive compaction waits for the next turn.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

Tier = Literal["none", "soft", "hard"]

SOFT_COMPACTION_THRESHOLD = 0.60  # spec default: "soft_compaction_threshold = 0.60"
HARD_COMPACTION_THRESHOLD = 0.90  # spec default: "hard_compaction_threshold = 0.90"
PROACTIVE_THRESHOLD_TOKENS = 80000  # spec default: "threshold_tokens = 80000"


def decide(
    used_tokens: int,
    budget: int,
    soft: float = SOFT_COMPACTION_THRESHOLD,
    hard: float = HARD_COMPACTION_THRESHOLD,
) -> Tier:
    """The tier: "hard" above hard × budget, "soft" above soft × budget, else "none" (always with budget 0)."""
    if budget <= 0:
        return "none"
    if used_tokens > hard * budget:
        return "hard"
    if used_tokens > soft * budget:
        return "soft"
    return "none"


def proactive_due(used_tokens: int, threshold_tokens: int = PROACTIVE_THRESHOLD_TOKENS) -> bool:
    """Proactive compression fires when the context exceeds `threshold_tokens`."""
    return used_tokens > threshold_tokens


def may_compact(
    context_tokens: int, capacity: int, *, soft: float, hard: float, proactive_threshold: int | None,
    provisional_due: bool,
) -> bool:
    """Whether a request with this context could make compaction act at all: a reactive tier, proactive
    compression (`proactive_threshold`, None when the strategy is reactive) or a provisional summary
    due for its redo. False means the compactor has nothing to do before this request."""
    if capacity <= 0:
        return False
    if decide(context_tokens, capacity, soft, hard) != "none" or provisional_due:
        return True
    return proactive_threshold is not None and proactive_due(context_tokens, proactive_threshold)


@dataclass
class TurnCompactionState:
    """The spec's `compacted_this_turn` flag: set by proactive or hard compaction, reset each turn."""

    compacted_this_turn: bool = False

    def start_turn(self) -> None:
        self.compacted_this_turn = False

    def mark_compacted(self) -> None:
        self.compacted_this_turn = True

    def reactive_tier(self, used_tokens: int, budget: int, soft: float, hard: float) -> Tier:
        """The reactive tier to run now: none at all once this turn has compacted."""
        return "none" if self.compacted_this_turn else decide(used_tokens, budget, soft, hard)
