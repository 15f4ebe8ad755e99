"""The budget invariant: no request leaves above the prompt's share of the budget.

Invariant: pure; `budget_problem` is the one check made just before a request
is sent, and `tool_output_allowance` keeps a single tool output within a
share of what the budget has left. It answers None when the request fits, else one sentence naming what
is too big and what to change. Nothing here drops anything: the assembler and
compaction do that, and when they cannot, the turn stops with this sentence.
"""

from __future__ import annotations

from .budget import more_room
from .report import ContextReport


def _share(report: ContextReport) -> str:
    return f"the {report.capacity:,}-token prompt budget ({report.budget:,} minus {report.reserved_for_response:,} kept for the reply)"


def budget_problem(report: ContextReport) -> str | None:
    if not report.over_budget:
        return None
    used, fixed, pinned = report.used_tokens, report.fixed_tokens, report.pinned_tokens
    summary = report.block("compaction summary")
    raise_budget = more_room(report.budget, report.window, report.window_source)
    if fixed > report.capacity:
        return (
            f"the request needs {used:,} tokens, more than {_share(report)}: the system prompt and tool schemas "
            f"alone take {fixed:,}; {raise_budget}, or use --mode ask for fewer tools"
        )
    with_summary = f", the compaction summary {summary.tokens:,}" if summary else ""
    return (
        f"the request needs {used:,} tokens, more than {_share(report)}: this turn's message and its tool results "
        f"take {pinned:,}, the system prompt and tool schemas {fixed:,}{with_summary}; shorten the message, "
        f"start a new session, or {raise_budget}"
    )


# One tool output may take this share of what the prompt budget has left
# (after the prompt layers, the summary and the running turn so far).
TOOL_OUTPUT_SHARE = 0.5
MIN_TOOL_OUTPUT_TOKENS = 64  # room for a head, a tail and the read_overflow marker


def tool_output_allowance(report: ContextReport) -> int | None:
    """Tokens the next tool output may take in the context (None without a budget)."""
    if not report.capacity:
        return None
    summary = report.block("compaction summary")
    left = report.capacity - report.fixed_tokens - (summary.tokens if summary else 0) - report.pinned_tokens
    return max(int(left * TOOL_OUTPUT_SHARE), MIN_TOOL_OUTPUT_TOKENS)
