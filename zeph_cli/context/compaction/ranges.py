"""Which messages a hard compaction summarizes, and how they are cut into chunks.

Invariant: pure; neither the range boundary nor a chunk boundary ever falls
inside a tool pair, the last `preserve_tail` messages are never in the range,
and earlier compaction summaries in the range are summarized again (carried
forward), not dropped.
"""

from __future__ import annotations

from ..assembler import HistoryItem, message_groups

COMPACTION_PRESERVE_TAIL = 4  # spec default: "compaction_preserve_tail = 4"
CHUNK_TOKENS = 4096  # spec: "split into ~4096-token chunks"
SUMMARY_PROMPT_TOKENS = 600  # the instructions around a chunk (about 340 tokens) and the guidelines, with room
MIN_CHUNK_TOKENS = 256


def chunk_size(window: int, budget: int, reply_cap: int) -> tuple[int, int]:
    """(chunk tokens, the tokens one summary request may take, 0 when unknown): the summarizer's `window`,
    never more than the context `budget` (0: unknown); chunks sized so that the chunk, its instructions and
    the reply fit."""
    window = min(w for w in (window, budget) if w) if window or budget else 0
    if not window:
        return CHUNK_TOKENS, 0
    return max(min(CHUNK_TOKENS, window - reply_cap - SUMMARY_PROMPT_TOKENS), MIN_CHUNK_TOKENS), window


def newest_round(history: list[HistoryItem], turn_start: int) -> int:
    """Index of the running turn's newest tool round (its user message when it has none yet).

    The spec's mid-iteration soft tier may prune older outputs of the running
    turn; the newest round, like the user's message, is always sent as it is.
    """
    for index in range(len(history) - 1, turn_start, -1):
        if history[index].message.tool_calls:
            return index
    return turn_start


def compaction_range(
    history: list[HistoryItem],
    preserve_tail: int = COMPACTION_PRESERVE_TAIL,
    keep_from: int | None = None,
    tail_tokens: int | None = None,
) -> tuple[list[HistoryItem], list[HistoryItem]]:
    """(middle, tail): `middle` is summarized, `tail` (at least `preserve_tail` messages) is kept.

    Everything from index `keep_from` on (the running turn) stays in the tail.
    When the boundary would fall inside a tool pair it moves back, so the whole
    pair stays in the tail. With `tail_tokens`, a preserved tail larger than
    that gives its oldest groups to the middle (never the running turn, never
    the newest group), so a compaction leaves room for more than one turn.
    """
    boundary = max(len(history) - max(preserve_tail, 0), 0)
    if keep_from is not None:
        boundary = min(boundary, keep_from)
    groups = message_groups(history)
    start = 0
    for group in groups:
        if start + len(group) > boundary:
            break
        start += len(group)
    if tail_tokens is not None:
        limit = len(history) - len(groups[-1]) if groups else 0  # the newest group always stays
        if keep_from is not None:
            limit = min(limit, keep_from)
        position = 0
        for group in groups:
            end = position + len(group)
            if position == start:
                if end > limit or sum(i.tokens for i in history[position:]) <= tail_tokens:
                    break
                start = end
            position = end
    return history[:start], history[start:]


def chunks(items: list[HistoryItem], chunk_tokens: int = CHUNK_TOKENS) -> list[list[HistoryItem]]:
    """Consecutive runs of about `chunk_tokens` tokens each; a tool pair is never split,
    and a group larger than `chunk_tokens` is a chunk of its own."""
    out: list[list[HistoryItem]] = []
    current: list[HistoryItem] = []
    used = 0
    for group in message_groups(items):
        size = sum(item.tokens for item in group)
        if current and used + size > chunk_tokens:
            out.append(current)
            current, used = [], 0
        current.extend(group)
        used += size
    if current:
        out.append(current)
    return out
