"""The token budget of one request, derived from config and the model's window.

Invariant: pure arithmetic; `context_budget_tokens = 0` means the model's
window (auto) unless `auto_budget` is off, in which case there is no budget.
"""

from __future__ import annotations

from dataclasses import dataclass

RESPONSE_RESERVE_FRACTION = 0.20


@dataclass(frozen=True)
class Budget:
    """The context's token budget, the reply's reserve and the compaction thresholds."""
    total: int  # 0 = unlimited
    reserved_for_response: int
    soft_threshold: float
    hard_threshold: float

    @property
    def available(self) -> int:
        """Tokens the prompt may use (total minus the response reserve); 0 = unlimited."""
        return max(self.total - self.reserved_for_response, 0) if self.total else 0


def compute_budget(
    *,
    configured_tokens: int,
    auto_budget: bool,
    window: int,
    soft_threshold: float,
    hard_threshold: float,
) -> Budget:
    total = configured_tokens or (window if auto_budget else 0)
    reserved = int(total * RESPONSE_RESERVE_FRACTION)
    return Budget(total, reserved, soft_threshold, hard_threshold)
