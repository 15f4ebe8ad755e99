"""`CompactionResult`: what one compaction did, as the user is told it.

Invariant: a plain value; `describe()` is one complete sentence for the
transcript and the CLI, and a probe HardFail always reads as a rejection.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..probe import REJECTED_MESSAGE


@dataclass(frozen=True)
class CompactionResult:
    kind: str
    tokens_before: int
    tokens_after: int
    messages_compacted: int = 0
    method: str = ""  # single | chunked | metadata (LLM compaction); empty for the soft tier
    summary_id: int | None = None
    skipped: str = ""  # why nothing was compacted
    outputs_pruned: int = 0
    summaries_applied: int = 0
    probe_verdict: str | None = None  # Pass | SoftFail | HardFail | Error | Skipped
    probe_score: float | None = None

    @property
    def tokens_saved(self) -> int:
        return max(self.tokens_before - self.tokens_after, 0)

    @property
    def rejected(self) -> bool:
        return self.probe_verdict == "HardFail"

    def describe(self) -> str:
        if self.skipped:
            return f"nothing to compact: {self.skipped}"
        if self.rejected:
            return REJECTED_MESSAGE
        tokens = f"{self.tokens_before:,} → {self.tokens_after:,} tokens"
        if not self.method:
            done = []
            if self.summaries_applied:
                done.append(f"applied {self.summaries_applied} tool summar{'y' if self.summaries_applied == 1 else 'ies'}")
            if self.outputs_pruned:
                done.append(f"pruned {self.outputs_pruned} old tool output{'s' * (self.outputs_pruned != 1)}")
            return f"{' and '.join(done)}: {tokens}"
        how = {
            "metadata": "metadata summary (the summarizer failed)",
            "chunked": "chunked summary",
        }.get(self.method, "summary")
        probe = f" · probe {self.probe_verdict} ({self.probe_score:.2f})" if self.probe_verdict else ""
        if self.kind == "redo":
            return f"redid the provisional summary from its {self.messages_compacted} messages: {tokens}{probe}"
        return f"compacted {self.messages_compacted} messages into a {how}: {tokens}{probe}"
