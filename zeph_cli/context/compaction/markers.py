"""The metadata keys and text markers compaction writes into history.

Invariant: every name the store and the agent must agree on lives here once;
a message's compaction state is read from its metadata, never guessed from
its text.
"""

from __future__ import annotations

from ..assembler import HistoryItem

# Metadata keys on stored messages.
DEFERRED_SUMMARY = "deferred_summary"  # on a tool pair's last response: its pending 1-2 sentence summary
PRUNED = "pruned"  # on a tool message whose outputs were replaced by a placeholder
COMPACTION_SUMMARY = "compaction_summary"  # on a message holding an LLM (or metadata) compaction summary
TOOL_SUMMARY = "tool_summary"  # on an applied "[tool summary] …" message

# Text markers.
SUMMARY_MARKER = "[compaction summary]"  # first line of every compaction summary
TOOL_SUMMARY_PREFIX = "[tool summary]"
COMPACTED = "[compacted]"  # a tool response removed from a summarization prompt


def pruned_placeholder(chars: int, overflow_id: str | None = None) -> str:
    """What a pruned tool output says instead of its content (and how to read it again, when kept)."""
    if overflow_id:
        return f'[tool output pruned: {chars} chars; read_overflow(id="{overflow_id}") reads it again]'
    return f"[tool output pruned: {chars} chars; the user can still see it]"


def is_pruned(item: HistoryItem) -> bool:
    return bool(item.metadata.get(PRUNED))


def is_compaction_summary(item: HistoryItem) -> bool:
    return bool(item.metadata.get(COMPACTION_SUMMARY))


def deferred_summary(item: HistoryItem) -> str:
    """The pending tool-pair summary stored on this message ('' when none)."""
    value = item.metadata.get(DEFERRED_SUMMARY)
    return value.strip() if isinstance(value, str) else ""
