"""The soft tier without an LLM: apply deferred tool-pair summaries, prune old tool outputs.

Invariant: pure; the most recent `protect_tokens` tokens of history are never
pruned (but for one output larger than that whole window), a pruned message keeps every tool_call_id so pairs stay valid, nothing
is pruned twice, and each applied summary replaces exactly one whole pair. Images go
first: a tool result's images are pruned (with its output) once they are older than
the newest IMAGE_PROTECT_SHARE of the protected window, and a pruned result names
each image it carried by its placeholder.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from ...images import placeholder
from ...messages import Message, ToolResultPart
from ...tokens import TokenCounter, count_message
from ..assembler import HistoryItem
from .markers import PRUNED, TOOL_SUMMARY, TOOL_SUMMARY_PREFIX, is_pruned, pruned_placeholder
from .pairs import find_tool_pairs

PRUNE_PROTECT_TOKENS = 40000  # spec default: "prune_protect_tokens = 40000"
IMAGE_PROTECT_SHARE = 0.25  # a tool result's images outlive it only in this newest share of the protected window


def _protected_from(history: list[HistoryItem], protect_tokens: int) -> int:
    """Index of the oldest message that has any of its tokens in the newest `protect_tokens`."""
    newer = 0
    index = len(history)
    while index > 0 and newer < protect_tokens:
        index -= 1
        newer += history[index].tokens
    return index


def _worth_pruning(message: Message) -> bool:
    """Pruning must make the message smaller, not just different."""
    results = message.tool_results
    if any(r.images for r in results):
        return True
    return bool(results) and sum(len(r.content) for r in results) > sum(
        len(pruned_placeholder(len(r.content))) for r in results
    )


PROTECT_SHARE = 0.3  # the protected window is at most this share of the prompt budget


def protect_window(protect_tokens: int, capacity: int) -> int:
    """The protected window: `prune_protect_tokens`, but never more than a share of the prompt budget
    (with a 6k prompt budget, a 40k window would protect everything and leave no soft tier)."""
    return min(protect_tokens, int(capacity * PROTECT_SHARE)) if capacity else protect_tokens


def plan_prune(
    history: list[HistoryItem],
    protect_tokens: int = PRUNE_PROTECT_TOKENS,
    keep_from: int | None = None,
    protected_from: int | None = None,
) -> list[int]:
    """Ids of stored `tool` messages whose outputs may be pruned: those older than the protected
    tail, and inside it any single output larger than the whole protected window.

    Nothing from index `keep_from` on (the running turn's newest round) is
    listed. With `protected_from`, the protected tail instead starts at that
    index, whatever its size (the hard tier's first step: prune the outputs an
    LLM summary would take in anyway). Unstored messages (id 0) are never
    listed: pruning is persisted before it is applied.
    """
    end = len(history) if keep_from is None else keep_from
    if protected_from is not None:
        boundary, protect_tokens = protected_from, sum(item.tokens for item in history)
        image_boundary = boundary
    else:
        boundary = _protected_from(history, protect_tokens)
        image_boundary = _protected_from(history, int(protect_tokens * IMAGE_PROTECT_SHARE))
    return [
        item.id
        for index, item in enumerate(history[:end])
        if item.id
        and item.message.role == "tool"
        and not is_pruned(item)
        and (index < boundary or item.tokens > protect_tokens or (index < image_boundary and bool(item.message.images)))
        and _worth_pruning(item.message)
    ]


def pruned_message(message: Message, overflow_id: str | None = None) -> Message:
    """The message with each tool output replaced by a placeholder naming its size
    (and the overflow id its full text is kept under, when there is one), and each of its images by
    the image's placeholder."""
    parts = tuple(
        replace(p, content=_pruned_content(p, overflow_id), images=()) if isinstance(p, ToolResultPart) else p
        for p in message.parts
    )
    return Message(message.role, parts)


def _pruned_content(result: ToolResultPart, overflow_id: str | None) -> str:
    return "\n".join([pruned_placeholder(len(result.content), overflow_id), *(placeholder(i, "pruned") for i in result.images)])


def apply_prune(history: list[HistoryItem], ids: list[int], counter: TokenCounter) -> list[HistoryItem]:
    """History with the messages in `ids` pruned (metadata `pruned: true`, tokens recounted)."""
    chosen = set(ids)
    out = []
    for item in history:
        if item.id in chosen and not is_pruned(item):
            message = pruned_message(item.message)
            item = replace(
                item, message=message, tokens=count_message(counter, message), metadata={**item.metadata, PRUNED: True}
            )
        out.append(item)
    return out


@dataclass(frozen=True)
class AppliedSummary:
    """One tool pair replaced by its summary; what the store must persist."""

    hidden_ids: tuple[int, ...]  # stored ids of the pair's messages: agent_visible = false from now on
    summary: str  # the pair summary (without the prefix)
    item: HistoryItem  # the "[tool summary] …" assistant message now standing where the pair was

    @property
    def message(self) -> Message:
        return self.item.message


def tool_summary_message(summary: str) -> Message:
    return Message.assistant(f"{TOOL_SUMMARY_PREFIX} {summary}")


def apply_deferred(history: list[HistoryItem], counter: TokenCounter) -> tuple[list[HistoryItem], list[AppliedSummary]]:
    """Replace every pair carrying a deferred summary with one `[tool summary]` assistant message.

    The new message sits at the pair's position, is unstored (id 0) and has
    metadata {"tool_summary": true, "replaces": [ids]}.
    """
    by_start = {pair.start: pair for pair in find_tool_pairs(history) if pair.deferred_summary}
    out: list[HistoryItem] = []
    applied: list[AppliedSummary] = []
    index = 0
    while index < len(history):
        pair = by_start.get(index)
        if pair is None:
            out.append(history[index])
            index += 1
            continue
        message = tool_summary_message(pair.deferred_summary)
        hidden = tuple(i for i in pair.ids if i)
        item = HistoryItem(message, count_message(counter, message), 0, {TOOL_SUMMARY: True, "replaces": list(hidden)})
        out.append(item)
        applied.append(AppliedSummary(hidden, pair.deferred_summary, item))
        index += len(pair.items)
    return out, applied
