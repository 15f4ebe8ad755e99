"""Turning prompt layers and history into the messages of one request.

Invariant: pure; stable blocks come first (base prompt, environment, project
context, session prompt) and history last, so provider prompt caches keep
hitting. History that does not fit the budget is dropped oldest first, never
the newest message, and never a tool call without its result.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from ..messages import Message
from ..tokens import MESSAGE_OVERHEAD, REQUEST_OVERHEAD, Calibration, TokenCounter
from .allocation import allocate
from .budget import Budget
from .report import ContextBlock, ContextReport


@dataclass(frozen=True)
class PromptLayer:
    name: str
    text: str


@dataclass(frozen=True)
class HistoryItem:
    """One stored message as context logic sees it."""

    message: Message
    tokens: int  # raw estimate, before calibration
    id: int = 0  # the store's message id (0 = not stored)
    metadata: Mapping[str, Any] = field(default_factory=dict)


def message_groups(history: list[HistoryItem]) -> list[list[HistoryItem]]:
    """Split history into units that must stay together: a tool-calling
    assistant message with the tool results that answer it."""
    groups: list[list[HistoryItem]] = []
    for item in history:
        if item.message.role == "tool" and groups and groups[-1][0].message.tool_calls:
            groups[-1].append(item)
        else:
            groups.append([item])
    return groups


def fit_history(
    history: list[HistoryItem], allowance: int | None, calibration: Calibration = Calibration()
) -> tuple[list[HistoryItem], int]:
    """Keep the newest history within `allowance` (calibrated) tokens; return (kept, dropped count)."""
    if allowance is None:
        return history, 0
    groups = message_groups(history)
    kept: list[list[HistoryItem]] = []
    used = 0
    for group in reversed(groups):
        size = calibration.apply(sum(i.tokens for i in group))
        if kept and used + size > allowance:
            break
        kept.append(group)
        used += size
    kept_items = [i for g in reversed(kept) for i in g]
    return kept_items, len(history) - len(kept_items)


def assemble(
    layers: list[PromptLayer],
    history: list[HistoryItem],
    budget: Budget,
    counter: TokenCounter,
    *,
    window: int,
    tools_tokens: int = 0,
    calibration: Calibration = Calibration(),
) -> tuple[list[Message], ContextReport]:
    """Block tokens in the report are calibrated (what the provider will count);
    `raw_tokens` is the uncalibrated estimate, for learning the calibration.

    Compaction summaries (metadata `compaction_summary`) fill the summaries slot
    and are always sent, first; recent history gets the rest of the allowance.
    """
    layers = [layer for layer in layers if layer.text]
    raw_layers = [counter.count(layer.text) + MESSAGE_OVERHEAD for layer in layers]
    blocks = [ContextBlock(layer.name, calibration.apply(raw)) for layer, raw in zip(layers, raw_layers)]
    fixed = sum(b.tokens for b in blocks) + calibration.apply(tools_tokens + REQUEST_OVERHEAD)
    summaries = [i for i in history if i.metadata.get("compaction_summary")]
    recent = [i for i in history if not i.metadata.get("compaction_summary")]
    raw_summaries = sum(i.tokens for i in summaries)
    notes: list[str] = []
    allocation = None
    allowance = None
    if budget.available:
        shared = max(budget.available - fixed, 0)
        allocation = allocate(shared, {"summaries"} if summaries else set())
        summary_tokens = calibration.apply(raw_summaries)
        if summaries and shared and summary_tokens > allocation.for_slot("summaries"):
            notes.append(
                f"the compaction summary uses {summary_tokens:,} tokens, more than its "
                f"{allocation.shares['summaries']:.0%} share ({allocation.for_slot('summaries'):,})"
            )
        allowance = max(shared - summary_tokens, 0)
    kept, dropped = fit_history(recent, allowance, calibration)
    unsent = calibration.apply(sum(i.tokens for i in recent[: len(recent) - len(kept)])) if dropped else 0
    if tools_tokens:
        blocks.append(ContextBlock("tools", calibration.apply(tools_tokens)))
    if summaries:
        blocks.append(ContextBlock("compaction summary", calibration.apply(raw_summaries), f"{len(summaries)} summar{'y' if len(summaries) == 1 else 'ies'}"))
    raw_history = sum(i.tokens for i in kept) + REQUEST_OVERHEAD
    detail = f"{len(kept)} messages" + (f", {dropped} older not sent" if dropped else "")
    blocks.append(ContextBlock("history", calibration.apply(raw_history), detail))
    if dropped:
        notes.append(f"{dropped} older messages did not fit the budget and were not sent")
    messages = [Message.system(layer.text) for layer in layers] + [i.message for i in summaries + kept]
    report = ContextReport(
        blocks=tuple(blocks),
        window=window,
        budget=budget.total,
        reserved_for_response=budget.reserved_for_response,
        soft_threshold=budget.soft_threshold,
        hard_threshold=budget.hard_threshold,
        history_messages=len(kept),
        trimmed_messages=dropped,
        notes=tuple(notes),
        raw_tokens=sum(raw_layers) + tools_tokens + raw_summaries + raw_history,
        allocation=dict(allocation.tokens) if allocation else {},
        unsent_tokens=unsent,
    )
    return messages, report
