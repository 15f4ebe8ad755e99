"""Pure compaction logic: tool-pair summaries, pruning, LLM summarization of a range, loop guard.

Invariant: no I/O; functions take history items and return new lists plus
what the store must persist. LLM work goes through an injected async
`summarize(prompt) -> str`.
"""

from .anchored import AnchoredSummary, parse_anchored, render, validate
from .fallback import metadata_summary
from .guard import EXHAUSTED_WARNING, CompactionGuard
from .markers import (
    COMPACTED,
    COMPACTION_SUMMARY,
    DEFERRED_SUMMARY,
    PRUNED,
    SUMMARY_MARKER,
    TOOL_SUMMARY,
    TOOL_SUMMARY_PREFIX,
)
from .pairs import ToolPair, clean_pair_summary, find_tool_pairs, pair_to_summarize, tool_pair_prompt, unsummarized_pairs
from .extractive import cut_summary, extractive_summary
from .pruning import AppliedSummary, apply_deferred, apply_prune, plan_prune, protect_window, pruned_message
from .slot import condense_prompt, summary_cap
from .ranges import chunks, compaction_range
from .removal import TIERS, remove_middle_out
from .summarizer import SummaryOutcome, summarize_range
from .tiers import TurnCompactionState, decide, proactive_due

__all__ = [
    "AnchoredSummary",
    "AppliedSummary",
    "COMPACTED",
    "COMPACTION_SUMMARY",
    "CompactionGuard",
    "DEFERRED_SUMMARY",
    "EXHAUSTED_WARNING",
    "PRUNED",
    "SUMMARY_MARKER",
    "SummaryOutcome",
    "TIERS",
    "TOOL_SUMMARY",
    "TOOL_SUMMARY_PREFIX",
    "ToolPair",
    "TurnCompactionState",
    "apply_deferred",
    "apply_prune",
    "chunks",
    "clean_pair_summary",
    "compaction_range",
    "condense_prompt",
    "cut_summary",
    "extractive_summary",
    "decide",
    "find_tool_pairs",
    "metadata_summary",
    "pair_to_summarize",
    "parse_anchored",
    "plan_prune",
    "proactive_due",
    "protect_window",
    "pruned_message",
    "remove_middle_out",
    "render",
    "summarize_range",
    "summary_cap",
    "tool_pair_prompt",
    "unsummarized_pairs",
    "validate",
]
