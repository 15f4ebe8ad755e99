"""Pure compaction logic: tool-pair summaries, pruning, LLM summarization of a range, loop guard.

Invariant: no I/O; functions take history items and return new lists plus
what the store must persist. LLM work goes through an injected async
`summarize(prompt) -> str`.

Names are imported from their submodule on first use, so importing one submodule
(`tiers`, `markers`) does not import the rest.
"""

from __future__ import annotations

from ...lazy_names import lazy_names

_HOME = {
    "AnchoredSummary": "anchored",
    "parse_anchored": "anchored",
    "render": "anchored",
    "validate": "anchored",
    "metadata_summary": "fallback",
    "EXHAUSTED_WARNING": "guard",
    "CompactionGuard": "guard",
    "COMPACTED": "markers",
    "COMPACTION_SUMMARY": "markers",
    "DEFERRED_SUMMARY": "markers",
    "PRUNED": "markers",
    "SUMMARY_MARKER": "markers",
    "TOOL_SUMMARY": "markers",
    "TOOL_SUMMARY_PREFIX": "markers",
    "ToolPair": "pairs",
    "clean_pair_summary": "pairs",
    "find_tool_pairs": "pairs",
    "pair_to_summarize": "pairs",
    "tool_pair_prompt": "pairs",
    "unsummarized_pairs": "pairs",
    "cut_summary": "extractive",
    "extractive_summary": "extractive",
    "AppliedSummary": "pruning",
    "apply_deferred": "pruning",
    "apply_prune": "pruning",
    "plan_prune": "pruning",
    "protect_window": "pruning",
    "pruned_message": "pruning",
    "condense_prompt": "slot",
    "recall_room": "slot",
    "summary_cap": "slot",
    "summary_slot": "slot",
    "chunks": "ranges",
    "compaction_range": "ranges",
    "TIERS": "removal",
    "remove_middle_out": "removal",
    "SummaryOutcome": "summarizer",
    "summarize_range": "summarizer",
    "TurnCompactionState": "tiers",
    "decide": "tiers",
    "proactive_due": "tiers",
}

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
    "recall_room",
    "remove_middle_out",
    "render",
    "summarize_range",
    "summary_cap",
    "summary_slot",
    "tool_pair_prompt",
    "unsummarized_pairs",
    "validate",
]


__getattr__, __dir__ = lazy_names(__name__, _HOME)
