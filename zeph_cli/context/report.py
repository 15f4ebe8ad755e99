"""`ContextReport`: what one request contains, block by block, against its budget.

Invariant: a plain value computed by the assembler; every token the request
spends is attributed to exactly one named block. Compaction thresholds apply
to `usage`: everything the agent could send (`context_tokens`, history that was
trimmed included) over the prompt's share of the budget (`capacity`, the
budget minus the response reserve), so compaction fires before trimming has
to hide anything.
"""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True)
class ContextBlock:
    """One named block of a turn's context and its tokens."""
    name: str
    tokens: int
    detail: str = ""
    kept: tuple = field(default=(), compare=False)  # what of a shrinking block's entries went in


@dataclass(frozen=True)
class ContextReport:
    """What a turn's context holds, block by block, against its budget and thresholds."""
    blocks: tuple[ContextBlock, ...]
    window: int  # the model's context window
    budget: int  # tokens the context may use in all (0 = unlimited)
    reserved_for_response: int
    soft_threshold: float
    hard_threshold: float
    history_messages: int = 0
    trimmed_messages: int = 0
    notes: tuple[str, ...] = field(default_factory=tuple)
    raw_tokens: int = 0  # the estimate before per-model calibration
    # Tokens each slot of the spec's allocation table may use (empty without a budget).
    allocation: dict[str, int] = field(default_factory=dict)
    unsent_tokens: int = 0  # agent-visible history that did not fit and was not sent (calibrated)
    compaction: tuple[str, ...] = ()  # what was pruned or summarized just before this request
    fixed_tokens: int = 0  # prompt layers, tool schemas and request framing: sent whatever the history
    pinned_tokens: int = 0  # the running turn's user message and its tool chain, sent verbatim
    window_source: str = ""  # where `window` came from, e.g. "server: llama.cpp /props" ("" = not known)
    # The block each message of the request belongs to, one name per message in the order sent
    # (`zeph context --text`); not in `to_dict`, which describes blocks, not messages.
    sent_blocks: tuple[str, ...] = ()
    # The system layers that stay the same from turn to turn (`Block.stable`), in the order sent, up to the
    # first that changes: what a provider's prompt cache can keep (tokens), and that first layer ("" = none).
    stable_prefix_tokens: int = 0
    first_changing: str = ""

    @property
    def recalled_ids(self) -> tuple[int, ...]:
        """Stored ids of the past messages in the semantic-recall block."""
        return self._kept("semantic recall")

    @property
    def skills_shown(self) -> tuple[tuple[str, str], ...]:
        """Matched skills in <available_skills>: (name, "full" | "compact")."""
        return self._kept("skills")

    def _kept(self, name: str) -> tuple:
        block = self.block(name)
        return block.kept if block is not None else ()

    @property
    def used_tokens(self) -> int:
        return sum(b.tokens for b in self.blocks)

    @property
    def used_fraction(self) -> float:
        """Share of the whole budget the request takes (for display)."""
        return self.used_tokens / self.budget if self.budget else 0.0

    @property
    def capacity(self) -> int:
        """Tokens the prompt may use: the budget minus the response reserve (0 = unlimited)."""
        return max(self.budget - self.reserved_for_response, 0) if self.budget else 0

    @property
    def context_tokens(self) -> int:
        """What the whole agent-visible context takes, sent or not."""
        return self.used_tokens + self.unsent_tokens

    @property
    def usage(self) -> float:
        """`context_tokens` over `capacity`: the fraction the compaction thresholds are compared with."""
        return self.context_tokens / self.capacity if self.capacity else 0.0

    @property
    def usage_percent(self) -> int:
        """`usage` as the whole percent every front end shows (`zeph ask -u`, the gauge, `zeph context`,
        /context), rounded down so it never claims more than is used."""
        return self.context_tokens * 100 // self.capacity if self.capacity else 0

    def share_of_capacity(self, tokens: int) -> float:
        """`tokens` over the prompt budget (`capacity`), the one basis shares are given on (0 = no budget)."""
        return tokens / self.capacity if self.capacity else 0.0

    @property
    def over_budget(self) -> bool:
        """The request as assembled does not fit the prompt's share of the budget."""
        return bool(self.capacity) and self.used_tokens > self.capacity

    def block(self, name: str) -> ContextBlock | None:
        return next((b for b in self.blocks if b.name == name), None)

    def to_dict(self) -> dict:
        return {
            "blocks": [{"name": b.name, "tokens": b.tokens, "detail": b.detail} for b in self.blocks],
            "used_tokens": self.used_tokens,
            "window": self.window,
            "window_source": self.window_source,
            "budget": self.budget,
            "used_fraction": round(self.used_fraction, 4),
            "capacity": self.capacity,
            "context_tokens": self.context_tokens,
            "usage": round(self.usage, 4),
            "reserved_for_response": self.reserved_for_response,
            "soft_threshold": self.soft_threshold,
            "hard_threshold": self.hard_threshold,
            "history_messages": self.history_messages,
            "trimmed_messages": self.trimmed_messages,
            "notes": list(self.notes),
            "allocation": dict(self.allocation),
            "compaction": list(self.compaction),
            "recalled_ids": list(self.recalled_ids),
            "skills_shown": [{"name": n, "form": f} for n, f in self.skills_shown],
            "stable_prefix": {"tokens": self.stable_prefix_tokens, "ends_before": self.first_changing},
        }
