"""Subgoals: the task items a long task works through, as compaction sees them, and the hard tier's plan.

Invariant: pure values and functions, no I/O. A `Subgoal` is one task item's range of stored messages and
its state; the task list (`features/tasks`) records them. `plan_range` decides what one LLM compaction
summarizes of its candidate range: a tool call is never split from its results (groups move whole), the
messages of an ACTIVE subgoal are never in the summarized set unless keeping them would leave the request
over the hard line (then `over` names the subgoal and the whole range is summarized, as without
subgoals), and completed and abandoned ranges go first and hardest (alone when they free enough; their
tool outputs shown to the summarizer as pruned placeholders). `closing_lines` are the lines a summary
starts with, one per closed item it took in, written here rather than left to the summarizer.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import NamedTuple

from ..assembler import HistoryItem, message_groups
from .markers import is_pruned

ACTIVE, COMPLETED, ABANDONED = "active", "completed", "abandoned"
CLOSED = (COMPLETED, ABANDONED)

# How the range was cut (SubgoalPlan.mode).
PLAIN = "plain"  # no subgoal touches the range: the whole range, as without subgoals
CLOSED_ONLY = "closed only"  # completed/abandoned ranges alone bring usage under the line
NON_ACTIVE = "non-active"  # everything but the active ranges
FALLBACK = "fallback"  # the active ranges alone would leave the request over the hard line: the whole range


class Subgoal(NamedTuple):
    """One task item's messages: ids `first_id` through `last_id` (inclusive; None = still open, up to the
    newest message) were written while it was in progress."""

    item_id: str
    text: str
    state: str  # ACTIVE | COMPLETED | ABANDONED
    first_id: int
    last_id: int | None = None

    def holds(self, message_id: int) -> bool:
        return self.first_id <= message_id and (self.last_id is None or message_id <= self.last_id)


@dataclass(frozen=True)
class SubgoalPlan:
    """What one compaction does with its candidate range.

    `summarize`: the items to summarize, in history order (not necessarily contiguous); `kept`: the
    candidate items kept verbatim; `active`: the ids of the candidate items in active ranges (kept unless
    FALLBACK); `hardest`: ids among `summarize` whose tool outputs the
    summarizer sees as pruned placeholders (completed and abandoned ranges; none in FALLBACK); `closed`:
    the completed and abandoned subgoals whose messages are summarized, and `fallen`: the active items
    summarized anyway (FALLBACK; each item's first span); `over`: (the item's first span, the tokens of all
    its spans in the range) of the largest active item when FALLBACK; `outcome`: per
    subgoal index in the input, "summarized", "kept", "partly summarized" or "not in range".
    """

    mode: str
    summarize: list[HistoryItem]
    kept: list[HistoryItem] = field(default_factory=list)
    active: frozenset[int] = frozenset()
    hardest: frozenset[int] = frozenset()
    closed: tuple[Subgoal, ...] = ()
    fallen: tuple[Subgoal, ...] = ()
    over: tuple[Subgoal, int] | None = None
    outcome: tuple[str, ...] = ()


def origin_id(item: HistoryItem) -> int:
    """The stored id a message stands for when deciding which subgoal it belongs to: a pruned copy's
    original, the first of a summary's originals (a tool-pair or compaction summary is stored with a new,
    later id where its originals began), else its own id."""
    pruned_from = item.metadata.get("pruned_from")
    if isinstance(pruned_from, int):
        return pruned_from
    summary_of = item.metadata.get("summary_of")
    if isinstance(summary_of, list):
        ids = [i for i in summary_of if isinstance(i, int)]
        if ids:
            return min(ids)
    return item.id


def owners(item: HistoryItem, subgoals: Sequence[Subgoal]) -> list[int]:
    """Indexes in `subgoals` of the subgoals `item` belongs to."""
    anchor = origin_id(item)
    return [index for index, goal in enumerate(subgoals) if goal.holds(anchor)]


def plan_range(
    middle: list[HistoryItem],
    subgoals: Sequence[Subgoal],
    *,
    must_free: int | None = None,
    may_keep: int | None = None,
) -> SubgoalPlan:
    """The plan for summarizing `middle` (the candidate range, tool groups whole) given `subgoals`.

    A tool group belongs to an active subgoal when any of its messages does (then it is kept whole), else
    to the closed subgoals its messages belong to. `must_free`: the tokens (as the items count them) the
    summarized messages must take for usage to get under the line that triggered the compaction (None:
    no such line, e.g. compaction on demand: everything but the active ranges is summarized). `may_keep`:
    the tokens of active messages the range may keep and still leave the request under the hard line once
    the rest is summarized (None: no budget).

    - no subgoal holds a message of the range: PLAIN, the whole range;
    - the active messages take more than `may_keep`: FALLBACK, the whole range, `over` says which;
    - the completed and abandoned messages take at least `must_free`: CLOSED_ONLY, only they;
    - otherwise NON_ACTIVE: everything but the active messages.
    """
    groups = message_groups(middle)
    group_owners = [sorted({o for item in group for o in owners(item, subgoals)}) for group in groups]
    if not any(group_owners):
        return SubgoalPlan(PLAIN, list(middle), outcome=_outcome(subgoals, [], middle))
    active: list[list[HistoryItem]] = []
    closed: list[list[HistoryItem]] = []
    plain: list[list[HistoryItem]] = []
    active_tokens: dict[str, int] = {}  # per active item (all its spans)
    first_span: dict[str, Subgoal] = {}
    for group, found in zip(groups, group_owners):
        live = [subgoals[o] for o in found if subgoals[o].state == ACTIVE]
        if live:
            active.append(group)
            for item_id in dict.fromkeys(goal.item_id for goal in live):
                active_tokens[item_id] = active_tokens.get(item_id, 0) + _tokens(group)
            for goal in live:
                first_span.setdefault(goal.item_id, goal)
        elif any(subgoals[o].state in CLOSED for o in found):
            closed.append(group)
        else:
            plain.append(group)
    kept_tokens = sum(_tokens(g) for g in active)
    hardest = frozenset(
        item.id for group in closed for item in group if item.message.tool_results and not is_pruned(item)
    )
    active_ids = frozenset(item.id for group in active for item in group)
    if active and may_keep is not None and kept_tokens > may_keep:
        largest = max(active_tokens, key=lambda item: active_tokens[item])  # the first of equals
        return SubgoalPlan(  # as without subgoals: the whole range, every output read whole
            FALLBACK,
            list(middle),
            active=active_ids,
            closed=_closed(subgoals, middle),
            fallen=tuple(first_span.values()),
            over=(first_span[largest], active_tokens[largest]),
            outcome=_outcome(subgoals, middle, middle),
        )
    closed_tokens = sum(_tokens(g) for g in closed)
    if closed and must_free is not None and closed_tokens >= must_free:
        chosen = {id(g) for g in closed}
        mode = CLOSED_ONLY
    else:
        chosen = {id(g) for g in closed + plain}
        mode = NON_ACTIVE
    summarize = [item for group in groups if id(group) in chosen for item in group]
    kept = [item for group in groups if id(group) not in chosen for item in group]
    return SubgoalPlan(
        mode,
        summarize,
        kept,
        active=active_ids,
        hardest=hardest,
        closed=_closed(subgoals, summarize),
        outcome=_outcome(subgoals, summarize, middle),
    )


CLOSING_TEXT_CHARS = (80, 40, 16)  # an item's text shortened to these lengths, in turn, when the lines are over
FALLEN_NOTE = "still in progress (its earlier messages are summarized here)"


def closing_lines(plan: SubgoalPlan, count: Callable[[str], int] | None = None, max_tokens: int | None = None) -> str:
    """The lines a summary of `plan` starts with: one per task item whose messages it closed (and, in a
    fallback, one per active item summarized anyway), in the order the items first appear.

    With `count` and `max_tokens`, they take at most `max_tokens` as `count` counts them: the items' texts
    are shortened first, then the last lines give way to one "(N more items)"; "" when not even that fits."""
    items: list[tuple[str, str, str]] = []  # (item id, text, what became of it)
    seen: set[tuple[str, str]] = set()
    for goal in plan.closed:
        if (goal.item_id, goal.state) not in seen:
            seen.add((goal.item_id, goal.state))
            items.append((goal.item_id, goal.text, goal.state))
    for goal in plan.fallen:
        if (goal.item_id, ACTIVE) not in seen:
            seen.add((goal.item_id, ACTIVE))
            items.append((goal.item_id, goal.text, FALLEN_NOTE))
    text = _closing_text(items, None)
    if count is None or max_tokens is None or count(text) <= max_tokens:
        return text
    for chars in CLOSING_TEXT_CHARS:
        text = _closing_text(items, chars)
        if count(text) <= max_tokens:
            return text
    lines = _closing_text(items, CLOSING_TEXT_CHARS[-1]).split("\n")
    for kept in range(len(lines) - 1, -1, -1):
        more = len(lines) - kept
        text = "\n".join([*lines[:kept], f"({more} more item{'s' if more != 1 else ''})"])
        if count(text) <= max_tokens:
            return text
    return ""


def _closing_text(items: list[tuple[str, str, str]], chars: int | None) -> str:
    """The closing lines of `items`, each item's text cut to `chars` characters (None: whole)."""
    return "\n".join(f"Task {item_id} '{_shortened(text, chars)}' {what}" for item_id, text, what in items)


def _shortened(text: str, chars: int | None) -> str:
    return text if chars is None or len(text) <= chars else text[: chars - 1].rstrip() + "…"


def registry_text(subgoals: Sequence[Subgoal], plan: SubgoalPlan | None) -> str:
    """The subgoal registry as one compaction saw it: each subgoal, its state, its message range and what
    the compaction did with its messages."""
    lines = [f"mode: {plan.mode if plan else 'none'}"]
    if plan and plan.over:
        goal, tokens = plan.over
        lines.append(f"over budget: task {goal.item_id} '{goal.text}' keeps {tokens} tokens, too many to keep")
    if not subgoals:
        lines.append("no task item has been in progress")
    for index, goal in enumerate(subgoals):
        end = "newest" if goal.last_id is None else str(goal.last_id)
        what = plan.outcome[index] if plan and index < len(plan.outcome) else "not in range"
        lines.append(f"task {goal.item_id}\t{goal.state}\tmessages {goal.first_id}..{end}\t{what}\t{goal.text}")
    return "\n".join(lines) + "\n"


def _tokens(group: list[HistoryItem]) -> int:
    return sum(item.tokens for item in group)


def _closed(subgoals: Sequence[Subgoal], items: list[HistoryItem]) -> tuple[Subgoal, ...]:
    """The completed and abandoned subgoals holding any of `items`, in the order of the subgoals."""
    found = {o for item in items for o in owners(item, subgoals)}
    return tuple(goal for index, goal in enumerate(subgoals) if index in found and goal.state in CLOSED)


def _outcome(subgoals: Sequence[Subgoal], summarized: list[HistoryItem], middle: list[HistoryItem]) -> tuple[str, ...]:
    """Per subgoal: whether its messages in the range were summarized, kept, or are not in the range."""
    gone = {o for item in summarized for o in owners(item, subgoals)}
    within = {o for item in middle for o in owners(item, subgoals)}
    done = {id(item) for item in summarized}
    partly = {o for item in middle if id(item) not in done for o in owners(item, subgoals)}
    out = []
    for index in range(len(subgoals)):
        if index not in within:
            out.append("not in range")
        elif index in gone and index in partly:
            out.append("partly summarized")
        elif index in gone:
            out.append("summarized")
        else:
            out.append("kept")
    return tuple(out)
