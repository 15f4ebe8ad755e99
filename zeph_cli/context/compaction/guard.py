"""Compaction loop prevention: once compaction cannot make progress, stop trying for the session.

Invariant: within a session and a prompt budget, `exhausted` only ever goes
from False to True, and the user is warned exactly once; the three rules are
the spec's ("Compaction Loop Prevention"). A session keeps its guard (in its
metadata, `GUARD_KEY`) across processes; a guard set at one budget does not
hold at a larger one.
"""

from __future__ import annotations

from dataclasses import dataclass

EXHAUSTED_WARNING = (
    "Warning: context budget is too tight — compaction cannot free enough space.\n"
    "Consider increasing [memory] context_budget_tokens or starting a new session."
)

MIN_ELIGIBLE_MESSAGES = 2

TOO_FEW_MESSAGES = "fewer than 2 messages are eligible for compaction"
NO_NET_REDUCTION = "the summary takes as many tokens as it freed (no net reduction)"
STILL_OVER_HARD = "context usage is still above the hard compaction threshold after summarizing"

GUARD_KEY = "compaction_exhausted"  # conversation metadata: {"reason", "warned", "capacity"}


@dataclass
class CompactionGuard:
    """One per session. Ask `exhausted` before a hard-tier attempt; `check` after it."""

    exhausted: bool = False
    reason: str | None = None
    _warned: bool = False
    capacity: int = 0  # the prompt budget (tokens) compaction was exhausted at (0: not known)

    def to_metadata(self) -> dict | None:
        """What the session keeps of the guard (None while compaction is not exhausted)."""
        if not self.exhausted:
            return None
        return {"reason": self.reason, "warned": self._warned, "capacity": self.capacity}

    @classmethod
    def from_metadata(cls, data: object, capacity: int) -> "CompactionGuard":
        """The session's guard as kept (`to_metadata`), at a prompt budget of `capacity` tokens: a fresh one
        when none was kept, or when it was set at a smaller budget than this (raising the budget is what its
        warning advises, and it gives compaction room it did not have)."""
        if not isinstance(data, dict):
            return cls()
        at = data.get("capacity")
        if not isinstance(at, int) or isinstance(at, bool) or (capacity and capacity > at):
            return cls()
        reason = data.get("reason")
        return cls(True, reason if isinstance(reason, str) else None, bool(data.get("warned")), at)

    def check(
        self,
        eligible_count: int,
        tokens_before: int | None = None,
        tokens_after: int | None = None,
        still_over_hard: bool = False,
    ) -> str | None:
        """Record one hard-tier attempt; the reason compaction is now exhausted, or None.

        `eligible_count` is the number of messages in the compaction range;
        `tokens_before`/`tokens_after` are the context's tokens around the attempt
        (omit them when the attempt did not run for lack of messages).
        """
        if self.exhausted:
            return self.reason
        reason = None
        if eligible_count < MIN_ELIGIBLE_MESSAGES:
            reason = TOO_FEW_MESSAGES
        elif tokens_before is not None and tokens_after is not None and tokens_after >= tokens_before:
            reason = NO_NET_REDUCTION
        elif still_over_hard:
            reason = STILL_OVER_HARD
        if reason is not None:
            self.exhausted, self.reason = True, reason
        return reason

    def warning_once(self) -> str | None:
        """The user-facing warning the first time it is asked for after exhaustion, then None."""
        if not self.exhausted or self._warned:
            return None
        self._warned = True
        return EXHAUSTED_WARNING
