"""Turning blocks and history into the messages of one request.

Invariant: pure; the assembler takes blocks, the history and the budget, and places and fits
each block by its own fields (placement, order, share or slot, shrink policy), knowing no block by
name. Stable blocks come first (system layers: the cached system prompt, then `context` blocks
after them), then the compaction summaries and the history before the running turn (blocks at a
depth inserted in it), then the per-turn blocks (`context` messages — Octopus' role for retrieved
material) just before the running turn, and the closing blocks as the very last messages.
Everything before the per-turn blocks is the same from one turn to the next but for the turn just
added, so prompt caches (and a local server's KV cache) keep the history too. A block with a
share of the budget is sized before the history, which makes room for it; a block with an
allocation slot only takes room that is free: at most its slot and never within SLOT_HARD_MARGIN
of the hard compaction line (it may pass the soft one, into the room history grows into between
compactions), so it never causes an LLM compaction or trims history. The messages returned are
exactly those sent (tool results wrapped as untrusted data) and every token of them is in the
report, which is built from the same blocks, each message attributed to its block
(`sent_blocks`). History that does not fit the budget is dropped oldest first, never a tool call
without its result, and never the pinned turn (the user's message of the running turn and the tool
chain since): it travels verbatim, and when it cannot fit the report says so instead of cutting it.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import tzinfo
from typing import NamedTuple

from ..messages import Message
from ..tokens import MESSAGE_OVERHEAD, REQUEST_OVERHEAD, Calibration, TokenCounter
from .allocation import CODE_SLOT, allocate
from .blocks import Block, Fitted, HistoryItem, Placement, Room, Shrink
from .budget import RequestBudget
from .history_shaping import LANDMARK_KEY, cap_history, insert_at_depth, landmarks
from .report import ContextBlock, ContextReport
from .untrusted import delimit_tool_results, delimiter_tokens

# Blocks are calibrated one by one and history group by group: their roundings
# may add up to a few tokens more than the allowance they were fitted to.
ROUNDING_SLACK = 8
SLOT_HARD_MARGIN = 0.05  # a slotted block leaves this share of the budget free below the hard compaction line


@dataclass(frozen=True)
class PromptLayer:
    """A named part of the system prompt, in the order it is sent."""
    name: str
    text: str
    detail: str = ""  # shown beside the block in the report


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
    history: list[HistoryItem],
    allowance: int | None,
    calibration: Calibration = Calibration(),
    pinned_from: int | None = None,
) -> tuple[list[HistoryItem], int]:
    """Keep the newest history within `allowance` (calibrated) tokens; return (kept, dropped count).

    Items from index `pinned_from` on are always kept; older ones only while
    they fit. Without a pin the newest group is always kept.
    """
    if allowance is None:
        return history, 0
    groups = message_groups(history)
    kept: list[list[HistoryItem]] = []
    used_raw = 0  # calibrated as one total, the way the history block is: no rounding drift per group
    start = len(history)
    for group in reversed(groups):
        start -= len(group)
        size = sum(i.tokens for i in group)
        pinned = pinned_from is not None and start >= pinned_from
        if not pinned and (kept or pinned_from is not None) and calibration.apply(used_raw + size) > allowance:
            break
        kept.append(group)
        used_raw += size
    kept_items = [i for g in reversed(kept) for i in g]
    return kept_items, len(history) - len(kept_items)


def pinned_index(history: list[HistoryItem], pinned_id: int | None) -> int | None:
    """Index of the running turn's user message (stored id `pinned_id`) in `history`; None when absent."""
    return next((n for n, i in enumerate(history) if pinned_id and i.id == pinned_id), None)


def _as_sent(history: list[HistoryItem], counter: TokenCounter) -> list[HistoryItem]:
    """History items whose token counts include the untrusted-data wrapping of their tool results."""
    return [
        HistoryItem(i.message, i.tokens + delimiter_tokens(i.message, counter), i.id, i.metadata, i.created_at)
        if i.message.tool_results
        else i
        for i in history
    ]


class History(NamedTuple):
    """The conversation as the assembler takes it, and how it is shaped before it is fitted."""

    items: Sequence[HistoryItem]
    pinned_id: int | None = None  # the stored id of the running turn's user message
    max_messages: int = 0  # `max_chat_history`: recent history capped in messages (0 = off)
    landmark_gap_minutes: int = 0  # a dated marker before a user message after a longer gap (0 = off)
    zone: tzinfo | None = None  # the landmarks' time zone


class _Placed(NamedTuple):
    """A block as sent: its text and its calibrated and raw tokens."""

    block: Block
    text: str
    tokens: int
    raw: int
    detail: str
    kept: tuple = ()


_ORDER = {p: n for n, p in enumerate(Placement)}


def assemble(blocks: Sequence[Block], history: History, budget: RequestBudget) -> tuple[list[Message], ContextReport]:
    """The request's messages and their report. Block tokens in the report are calibrated (what the
    provider will count); `raw_tokens` is the uncalibrated estimate, for learning the calibration.

    Blocks sized by their sources are fixed: sent whole, the history makes room for them. Blocks with a
    share of the budget are fitted next, against everything else; the compaction summaries (metadata
    `compaction_summary`) are always sent, first, whatever their size (compaction sizes them: their
    share of the allocation is a floor, the soft line their ceiling); blocks with an allocation slot
    take only room nothing else uses; recent history gets the rest of the allowance.
    """
    counter, calibration, limits = budget.counter, budget.calibration, budget.limits
    items = _as_sent(list(history.items), counter)
    ordered = sorted(blocks, key=lambda b: (_ORDER[b.placement], b.order))
    sent_blocks = [b for b in ordered if b.placement is not Placement.REPORT]

    def raw_of(text: str) -> int:
        return counter.count(text) + MESSAGE_OVERHEAD

    def measure(text: str) -> int:
        return calibration.apply(raw_of(text))

    placed: dict[int, _Placed] = {}
    for block in sent_blocks:
        if not block.fits_room:
            fitted = _fit_alone(block, measure, budget.tools)
            if fitted.text:
                raw = raw_of(fitted.text)
                placed[id(block)] = _Placed(block, fitted.text, calibration.apply(raw), raw, fitted.detail, fitted.kept)
    for block in sent_blocks:  # shares: sized against all else, before the history
        if block.share:
            others = sum(p.raw for p in placed.values() if not p.block.fits_room)
            used = calibration.apply(others + budget.tools_tokens + REQUEST_OVERHEAD + sum(i.tokens for i in items))
            available = limits.available
            room = Room(int(available * block.share) if available else block.cap,
                        available - used if available else None, measure, budget.tools)
            fitted = _fitted(block, room)
            if fitted.text:
                raw = raw_of(fitted.text)
                placed[id(block)] = _Placed(block, fitted.text, calibration.apply(raw), raw, fitted.detail, fitted.kept)
    fixed = sum(p.tokens for p in placed.values()) + calibration.apply(budget.tools_tokens + REQUEST_OVERHEAD)
    slotted = [b for b in sent_blocks if b.slot and not b.share]
    summaries = [i for i in items if i.metadata.get("compaction_summary")]
    recent = [i for i in items if not i.metadata.get("compaction_summary")]
    recent, capped = cap_history(message_groups(recent), history.max_messages, pinned_index(recent, history.pinned_id))
    recent = _with_landmarks(recent, history.landmark_gap_minutes, history.zone, counter)
    raw_summaries = sum(i.tokens for i in summaries)
    notes: list[str] = []
    allocation = None
    allowance = None
    if limits.available:
        shared = max(limits.available - fixed, 0)
        present = ({"summaries"} if summaries else set()) | {b.slot for b in slotted if _has_content(b)}
        # The spec's "with code index" column applies when code is retrieved for the turn.
        allocation = allocate(shared, present, code_index=CODE_SLOT in present,
                              overrides={b.slot: b.slot_share for b in slotted if b.slot_share})
        summary_tokens = calibration.apply(raw_summaries)
        everything = fixed + summary_tokens + calibration.apply(sum(i.tokens for i in recent))
        # a slot may take what is left below the hard line (less a margin), not only below the soft one:
        # history grows into the room below the soft line between compactions, and the slot would go first
        free = int(limits.available * max(limits.hard_threshold - SLOT_HARD_MARGIN, limits.soft_threshold)) \
            - everything - ROUNDING_SLACK
        slot_tokens = 0
        for block in slotted:
            if not _has_content(block):
                continue
            fitted = _fitted(block, Room(min(allocation.for_slot(block.slot), free - slot_tokens), None, measure, budget.tools))
            if fitted.text:
                raw = raw_of(fitted.text)
                placed[id(block)] = _Placed(block, fitted.text, calibration.apply(raw), raw, fitted.detail, fitted.kept)
                slot_tokens += calibration.apply(raw)
        # The summaries share is the slot's floor: a summary takes what history leaves below the soft line.
        below_soft = int(limits.available * limits.soft_threshold) - fixed
        if summaries and shared and summary_tokens > max(allocation.for_slot("summaries"), below_soft):
            notes.append(
                f"the compaction summary uses {summary_tokens:,} tokens, more than its "
                f"{allocation.shares['summaries']:.0%} share ({allocation.for_slot('summaries'):,}) and the "
                f"{max(below_soft, 0):,} below the soft compaction line"
            )
        allowance = max(shared - summary_tokens - slot_tokens - ROUNDING_SLACK, 0)
    pinned_from = pinned_index(recent, history.pinned_id)
    kept, dropped = fit_history(recent, allowance, calibration, pinned_from)
    pinned_tokens = calibration.apply(sum(i.tokens for i in recent[pinned_from:])) if pinned_from is not None else 0
    unsent = calibration.apply(sum(i.tokens for i in recent[: len(recent) - len(kept)])) if dropped else 0
    raw_history = sum(i.tokens for i in kept) + REQUEST_OVERHEAD
    marks = sum(1 for i in kept if i.metadata.get(LANDMARK_KEY))
    dropped -= sum(1 for i in recent[: len(recent) - len(kept)] if i.metadata.get(LANDMARK_KEY))
    if dropped:
        notes.append(f"{dropped} older messages did not fit the budget and were not sent")
    if not limits.available:  # no budget to take a slot of: each takes its cap
        for block in slotted:
            if _has_content(block):
                fitted = _fitted(block, Room(block.cap, None, measure, budget.tools))
                if fitted.text:
                    raw = raw_of(fitted.text)
                    placed[id(block)] = _Placed(block, fitted.text, calibration.apply(raw), raw, fitted.detail, fitted.kept)
    sent = [placed[id(b)] for b in sent_blocks if id(b) in placed]
    by_place = {p: [s for s in sent if s.block.placement is p] for p in Placement}
    history_messages = [i.message for i in summaries + kept]
    depths = by_place[Placement.DEPTH]
    with_depths = history_messages
    if depths:
        with_depths = insert_at_depth(history_messages, [(d.block.depth, d.text) for d in depths], len(summaries))
    at = _running_turn_start(kept, history.pinned_id) + len(summaries)
    # the same message object in `with_depths` (at-depth blocks may sit before it); the end when none runs
    at = next(n for n, m in enumerate(with_depths) if m is history_messages[at]) if at < len(history_messages) else len(with_depths)
    head = [Message.system(p.text) for p in by_place[Placement.SYSTEM]] + [Message.context(p.text) for p in by_place[Placement.CONTEXT]]
    per_turn = [Message.context(p.text) for p in by_place[Placement.BEFORE_TURN]]
    closing = [Message.context(p.text) for p in by_place[Placement.CLOSING]]
    messages = delimit_tool_results(head + with_depths[:at] + per_turn + with_depths[at:] + closing)
    detail = (
        f"{len(kept) - marks} messages"
        + (f", {marks} time landmark{'s' * (marks != 1)}" if marks else "")
        + (f", {capped} older beyond max_chat_history" if capped else "")
        + (f", {dropped} older not sent" if dropped else "")
    )

    stable_tokens, first_changing = 0, ""
    for p in [*by_place[Placement.SYSTEM], *by_place[Placement.CONTEXT]]:  # the head of the request, in order
        if not p.block.stable:
            first_changing = p.block.name
            break
        stable_tokens += p.tokens

    def rows(place: Placement) -> list[ContextBlock]:
        return [ContextBlock(p.block.name, p.tokens, p.detail, p.kept) for p in by_place[place]]

    report_blocks = [
        *rows(Placement.SYSTEM), *rows(Placement.CONTEXT),
        *([ContextBlock("tools", calibration.apply(budget.tools_tokens))] if budget.tools_tokens else []),
        *([ContextBlock("compaction summary", calibration.apply(raw_summaries),
                        f"{len(summaries)} summar{'y' if len(summaries) == 1 else 'ies'}")] if summaries else []),
        *rows(Placement.BEFORE_TURN),
        ContextBlock("history", calibration.apply(raw_history), detail),
        *rows(Placement.DEPTH), *rows(Placement.CLOSING),
        *(ContextBlock(b.name, 0, b.detail) for b in ordered if b.placement is Placement.REPORT),
    ]
    report = ContextReport(
        blocks=tuple(report_blocks),
        window=budget.window,
        budget=limits.total,
        reserved_for_response=limits.reserved_for_response,
        soft_threshold=limits.soft_threshold,
        hard_threshold=limits.hard_threshold,
        history_messages=len(kept) - marks,
        trimmed_messages=dropped,
        notes=tuple(notes),
        raw_tokens=sum(p.raw for p in sent) + budget.tools_tokens + raw_summaries + raw_history,
        allocation=dict(allocation.tokens) if allocation else {},
        unsent_tokens=unsent,
        fixed_tokens=fixed,
        pinned_tokens=pinned_tokens,
        sent_blocks=_sent_blocks(by_place, summaries, with_depths, at),
        stable_prefix_tokens=stable_tokens,
        first_changing=first_changing,
    )
    return messages, report


def _has_content(block: Block) -> bool:
    return bool(block.content)


def _fit_alone(block: Block, measure: Callable[[str], int], tools: frozenset[str]) -> Fitted:
    """A block without a share or a slot: its text, or its entries within its cap; `TRUNCATE` and `DROP`
    keep it within its cap (0 = none)."""
    if isinstance(block.content, str):
        if not block.content or not block.cap or measure(block.content) <= block.cap:
            return Fitted(block.content, block.detail)
        if block.shrink is Shrink.DROP:
            return Fitted()
        if block.shrink is Shrink.TRUNCATE:
            return Fitted(truncate_to(block.content, block.cap, measure), block.detail)
        return Fitted(block.content, block.detail)
    return block.content.fit(Room(block.cap, None, measure, tools))


def _fitted(block: Block, room: Room) -> Fitted:
    """A block with a share or a slot within `room`: entries fit themselves; text is truncated or dropped."""
    if not isinstance(block.content, str):  # entries
        return block.content.fit(room)
    if not block.content or room.measure(block.content) <= room.allowance:
        return Fitted(block.content, block.detail)
    if block.shrink is Shrink.TRUNCATE:
        return Fitted(truncate_to(block.content, room.allowance, room.measure), block.detail)
    return Fitted()  # a text that does not fit its room is dropped


def truncate_to(text: str, allowance: int, measure: Callable[[str], int]) -> str:
    """The longest head of `text` (cut at a line, else a word, with an ellipsis) within `allowance`; "" when
    not even a word fits."""
    if measure(text) <= allowance:
        return text
    low, high = 0, len(text)
    while low < high:  # the longest prefix whose cut form fits
        mid = (low + high + 1) // 2
        if measure(_cut(text, mid)) <= allowance:
            low = mid
        else:
            high = mid - 1
    return _cut(text, low) if low else ""


def _cut(text: str, length: int) -> str:
    head = text[:length]
    for stop in ("\n", " "):
        at = head.rfind(stop)
        if at > 0:
            head = head[:at]
            break
    return head.rstrip() + "…"


def _sent_blocks(
    by_place: Mapping[Placement, list[_Placed]], summaries: list[HistoryItem], sent: list[Message], at: int
) -> tuple[str, ...]:
    """The block each message of the request belongs to, in the order `assemble` puts them: the system
    layers, the history (compaction summaries and at-depth blocks by their own names, time landmarks in
    the history's) split around the per-turn blocks, then the closing blocks."""
    summary_ids = {id(i.message) for i in summaries}
    depth_names = {p.text: p.block.name for p in by_place[Placement.DEPTH]}

    def in_history(message: Message) -> str:
        if id(message) in summary_ids:
            return "compaction summary"
        if message.role == "context" and message.content in depth_names:
            return depth_names[message.content]
        return "history"

    def names(place: Placement) -> list[str]:
        return [p.block.name for p in by_place[place]]

    return (
        *names(Placement.SYSTEM), *names(Placement.CONTEXT),
        *(in_history(m) for m in sent[:at]),
        *names(Placement.BEFORE_TURN),
        *(in_history(m) for m in sent[at:]),
        *names(Placement.CLOSING),
    )


def _running_turn_start(kept: list[HistoryItem], pinned_id: int | None) -> int:
    """Where the per-turn blocks go in the kept history: before the running turn (its time landmark
    included) — the pinned message, else a trailing user message not answered yet — or at the end
    when there is none (a preview of the next request), so the history before them stays a cached prefix."""
    if pinned_id is not None:
        at = next((n for n, item in enumerate(kept) if item.id == pinned_id), len(kept))
    else:
        sent = [n for n, item in enumerate(kept) if item.message.role != "context"]
        at = sent[-1] if sent and kept[sent[-1]].message.role == "user" else len(kept)
    while at > 0 and kept[at - 1].metadata.get(LANDMARK_KEY):
        at -= 1
    return at


def _with_landmarks(
    recent: list[HistoryItem], gap_minutes: int, zone: tzinfo | None, counter: TokenCounter
) -> list[HistoryItem]:
    """`recent` with a time landmark (a `context` item) before each user message after a long gap."""
    marks = landmarks([(i.message.role, i.created_at) for i in recent], gap_minutes, zone)
    if not marks:
        return recent
    shaped: list[HistoryItem] = []
    for index, item in enumerate(recent):
        if index in marks:
            text = marks[index]
            shaped.append(HistoryItem(Message.context(text), counter.count(text) + MESSAGE_OVERHEAD, 0, {LANDMARK_KEY: True}))
        shaped.append(item)
    return shaped


