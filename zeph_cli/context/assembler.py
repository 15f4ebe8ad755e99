"""Turning prompt layers and history into the messages of one request.

Invariant: pure; stable blocks come first (base prompt, environment, project
context, mode, global and topic prompts: the cached system prompt), then the
compaction summaries and the history before the running turn, then the per-turn
blocks (worldbook an_top, time, long-term memory, recent conversations, user
profile, worldbook outlet, semantic recall, worldbook an_bottom: `context`
messages — Octopus' role for retrieved material) just before the running turn, and the closing
blocks (the enhancement prompt) as the very last messages. Everything before the
per-turn blocks is the same from one turn to the next but for the turn just
added, so prompt caches (and a local server's KV cache) keep the history too. Semantic recall only
takes room that is free: at most its allocation share and never within
RECALL_HARD_MARGIN of the hard compaction line (it may pass the soft one, into the
room history grows into between compactions), so it never causes an LLM
compaction or trims history. The messages returned are exactly those sent (tool results wrapped as
untrusted data) and every token of them is in the report, each message
attributed to its block (`sent_blocks`). History that does
not fit the budget is dropped oldest first, never a tool call without its
result, and never the pinned turn (the user's message of the running turn and
the tool chain since): it travels verbatim, and when it cannot fit the report
says so instead of cutting it.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import tzinfo
from typing import TYPE_CHECKING, Any

from ..messages import Message
from ..tokens import MESSAGE_OVERHEAD, REQUEST_OVERHEAD, Calibration, TokenCounter
from .allocation import allocate
from .budget import Budget
from .history_shaping import LANDMARK_KEY, cap_history, landmarks
from .recall_block import RecallEntry, fit_recall
from .report import ContextBlock, ContextReport
from .untrusted import delimit_tool_results, delimiter_tokens

if TYPE_CHECKING:  # the skills and worldbook modules load when a turn has skills or at-depth entries
    from .skills_block import SkillsBlock, SkillsInput

# Blocks are calibrated one by one and history group by group: their roundings
# may add up to a few tokens more than the allowance they were fitted to.
ROUNDING_SLACK = 8
RECALL_HARD_MARGIN = 0.05  # recall leaves this share of the budget free below the hard compaction line
UNBUDGETED_RECALL_TOKENS = 2000  # the recall block's cap when there is no budget to take a share of
RECALL_SLOT = "semantic_recall"
SKILLS_LAYER = "skills"


@dataclass(frozen=True)
class PromptLayer:
    """A named part of the system prompt, in the order it is sent."""
    name: str
    text: str
    detail: str = ""  # shown beside the block in the report


@dataclass(frozen=True)
class HistoryItem:
    """One stored message as context logic sees it."""

    message: Message
    tokens: int  # raw estimate, before calibration
    id: int = 0  # the store's message id (0 = not stored)
    metadata: Mapping[str, Any] = field(default_factory=dict)
    created_at: str = ""  # the store's ISO 8601 timestamp ("" = unknown)


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


def assemble(
    layers: list[PromptLayer],
    history: list[HistoryItem],
    budget: Budget,
    counter: TokenCounter,
    *,
    window: int,
    tools_tokens: int = 0,
    calibration: Calibration = Calibration(),
    pinned_id: int | None = None,
    context_layers: list[PromptLayer] | None = None,
    recall: tuple[RecallEntry, ...] | list[RecallEntry] = (),
    skills: SkillsInput | None = None,
    closing_layers: list[PromptLayer] | None = None,
    max_chat_history: int = 0,
    landmark_gap_minutes: int = 0,
    zone: tzinfo | None = None,
    late_context_layers: list[PromptLayer] | None = None,
    depth_layers: list[tuple[int, PromptLayer]] | None = None,
) -> tuple[list[Message], ContextReport]:
    """Block tokens in the report are calibrated (what the provider will count);
    `raw_tokens` is the uncalibrated estimate, for learning the calibration.

    Compaction summaries (metadata `compaction_summary`) are always sent, first, whatever their
    size (compaction sizes them: their share of the allocation is a floor, the soft line their ceiling);
    recent history gets the rest of the allowance.
    `pinned_id` is the stored id of the running turn's user message.
    `context_layers` (long-term memory) follow the prompt layers as `context`
    messages; `recall` entries fill the semantic-recall block after them.
    `skills` become the last system layer (`<available_skills>`, `<other_skills>`),
    within their share of the budget, compact under `auto` when little room is left.
    `closing_layers` (the enhancement prompt) are `context` messages after the history: the
    request's last messages. `max_chat_history` caps the recent history in messages (0 = off);
    `landmark_gap_minutes` puts a dated `context` marker before a user message that comes
    longer than that after the previous one (0 = off), its time shown in `zone`.
    `late_context_layers` (worldbook an_bottom) are `context` messages after semantic recall, the
    last of the per-turn blocks before the running turn; `depth_layers` (worldbook at_depth) are `(depth, layer)` pairs inserted that
    many messages from the end of the history sent, never between a tool call and its result.
    """
    history = _as_sent(history, counter)
    layers = [layer for layer in layers if layer.text]
    late = [layer for layer in late_context_layers or [] if layer.text]
    extra = [layer for layer in context_layers or [] if layer.text] + late
    depths = [(d, layer) for d, layer in depth_layers or [] if layer.text]
    closing = [layer for d, layer in depths] + [layer for layer in closing_layers or [] if layer.text]
    skills_block: SkillsBlock | None = None
    if skills is not None:
        skills_block = _skills_layer(skills, layers + extra + closing, history, budget, counter, calibration, tools_tokens)
        if skills_block.text:
            layers = [*layers, PromptLayer(SKILLS_LAYER, skills_block.text)]
    raw_layers = [counter.count(layer.text) + MESSAGE_OVERHEAD for layer in layers + extra]
    blocks = [
        ContextBlock(
            layer.name, calibration.apply(raw),
            skills_block.detail if skills_block is not None and layer.name == SKILLS_LAYER else layer.detail,
        )
        for layer, raw in zip(layers + extra, raw_layers)
    ]
    raw_closing = [counter.count(layer.text) + MESSAGE_OVERHEAD for layer in closing]
    closing_blocks = [ContextBlock(layer.name, calibration.apply(raw), layer.detail) for layer, raw in zip(closing, raw_closing)]
    fixed = sum(b.tokens for b in blocks + closing_blocks) + calibration.apply(tools_tokens + REQUEST_OVERHEAD)
    summaries = [i for i in history if i.metadata.get("compaction_summary")]
    recent = [i for i in history if not i.metadata.get("compaction_summary")]
    recent, capped = cap_history(message_groups(recent), max_chat_history, pinned_index(recent, pinned_id))
    recent = _with_landmarks(recent, landmark_gap_minutes, zone, counter)
    raw_summaries = sum(i.tokens for i in summaries)
    notes: list[str] = []
    allocation = None
    allowance = None
    recalled: tuple[int, ...]
    recall_text, recalled = "", ()
    raw_recall = 0
    if budget.available:
        shared = max(budget.available - fixed, 0)
        present = ({"summaries"} if summaries else set()) | ({RECALL_SLOT} if recall else set())
        allocation = allocate(shared, present)
        summary_tokens = calibration.apply(raw_summaries)
        if recall:
            everything = fixed + summary_tokens + calibration.apply(sum(i.tokens for i in recent))
            # recall may take what is left below the hard line (less a margin), not only below the soft one:
            # history grows into the room below the soft line between compactions, and recall would go first
            free = int(budget.available * max(budget.hard_threshold - RECALL_HARD_MARGIN, budget.soft_threshold)) \
                - everything - ROUNDING_SLACK
            recall_text, recalled = _recall_block(
                recall, min(allocation.for_slot(RECALL_SLOT), free), counter, calibration
            )
            raw_recall = counter.count(recall_text) + MESSAGE_OVERHEAD if recall_text else 0
        # The summaries share is the slot's floor: a summary takes what history leaves below the soft line.
        below_soft = int(budget.available * budget.soft_threshold) - fixed
        if summaries and shared and summary_tokens > max(allocation.for_slot("summaries"), below_soft):
            notes.append(
                f"the compaction summary uses {summary_tokens:,} tokens, more than its "
                f"{allocation.shares['summaries']:.0%} share ({allocation.for_slot('summaries'):,}) and the "
                f"{max(below_soft, 0):,} below the soft compaction line"
            )
        recall_tokens = calibration.apply(raw_recall) if recall_text else 0
        allowance = max(shared - summary_tokens - recall_tokens - ROUNDING_SLACK, 0)
    pinned_from = pinned_index(recent, pinned_id)
    kept, dropped = fit_history(recent, allowance, calibration, pinned_from)
    pinned_tokens = calibration.apply(sum(i.tokens for i in recent[pinned_from:])) if pinned_from is not None else 0
    unsent = calibration.apply(sum(i.tokens for i in recent[: len(recent) - len(kept)])) if dropped else 0
    if tools_tokens:
        blocks.append(ContextBlock("tools", calibration.apply(tools_tokens)))
    if recall_text:
        blocks.append(ContextBlock("semantic recall", calibration.apply(raw_recall), f"{len(recalled)} recalled"))
    if summaries:
        blocks.append(ContextBlock("compaction summary", calibration.apply(raw_summaries), f"{len(summaries)} summar{'y' if len(summaries) == 1 else 'ies'}"))
    raw_history = sum(i.tokens for i in kept) + REQUEST_OVERHEAD
    marks = sum(1 for i in kept if i.metadata.get(LANDMARK_KEY))
    dropped -= sum(1 for i in recent[: len(recent) - len(kept)] if i.metadata.get(LANDMARK_KEY))
    detail = (
        f"{len(kept) - marks} messages"
        + (f", {marks} time landmark{'s' * (marks != 1)}" if marks else "")
        + (f", {capped} older beyond max_chat_history" if capped else "")
        + (f", {dropped} older not sent" if dropped else "")
    )
    blocks.append(ContextBlock("history", calibration.apply(raw_history), detail))
    blocks.extend(closing_blocks)
    if dropped:
        notes.append(f"{dropped} older messages did not fit the budget and were not sent")
    if recall and not budget.available:
        recall_text, recalled = _recall_block(recall, UNBUDGETED_RECALL_TOKENS, counter, calibration)
        raw_recall = counter.count(recall_text) + MESSAGE_OVERHEAD if recall_text else 0
        if recall_text:
            blocks.append(ContextBlock("semantic recall", calibration.apply(raw_recall), f"{len(recalled)} recalled"))
    early = extra[: len(extra) - len(late)]
    per_turn = [Message.context(layer.text) for layer in early] + ([Message.context(recall_text)] if recall_text else [])
    per_turn += [Message.context(layer.text) for layer in late]
    history_messages = [i.message for i in summaries + kept]
    sent = history_messages
    if depths:
        from .worldbook_block import insert_at_depth

        sent = insert_at_depth(history_messages, [(d, layer.text) for d, layer in depths], len(summaries))
    at = _running_turn_start(kept, pinned_id) + len(summaries)
    # the same message object in `sent` (at_depth blocks may sit before it); the end when none runs
    at = next(n for n, m in enumerate(sent) if m is history_messages[at]) if at < len(history_messages) else len(sent)
    messages = [Message.system(layer.text) for layer in layers] + sent[:at] + per_turn + sent[at:]
    messages += [Message.context(layer.text) for layer in closing[len(depths):]]
    messages = delimit_tool_results(messages)
    sent_blocks = _sent_blocks(layers, summaries, depths, sent, at, early, bool(recall_text), late, closing[len(depths):])
    report = ContextReport(
        blocks=_in_request_order(blocks, len(layers), len(extra) - len(late), len(late)),
        window=window,
        budget=budget.total,
        reserved_for_response=budget.reserved_for_response,
        soft_threshold=budget.soft_threshold,
        hard_threshold=budget.hard_threshold,
        history_messages=len(kept) - marks,
        trimmed_messages=dropped,
        notes=tuple(notes),
        raw_tokens=sum(raw_layers) + sum(raw_closing) + tools_tokens + raw_summaries + raw_recall + raw_history,
        allocation=dict(allocation.tokens) if allocation else {},
        unsent_tokens=unsent,
        fixed_tokens=fixed,
        pinned_tokens=pinned_tokens,
        recalled_ids=recalled,
        skills_shown=_skills_shown(skills_block),
        sent_blocks=sent_blocks,
    )
    return messages, report


def _sent_blocks(
    layers: list[PromptLayer],
    summaries: list[HistoryItem],
    depths: list[tuple[int, PromptLayer]],
    sent: list[Message],
    at: int,
    early: list[PromptLayer],
    recalled: bool,
    late: list[PromptLayer],
    closing: list[PromptLayer],
) -> tuple[str, ...]:
    """The block each message of the request belongs to, in the order `assemble` puts them: the system
    layers, the history (compaction summaries and at-depth entries by their own blocks, time landmarks in
    the history's) split around the per-turn blocks, then the closing blocks."""
    summary_ids = {id(i.message) for i in summaries}
    depth_names = {layer.text: layer.name for _, layer in depths}

    def in_history(message: Message) -> str:
        if id(message) in summary_ids:
            return "compaction summary"
        if message.role == "context" and message.content in depth_names:
            return depth_names[message.content]
        return "history"

    per_turn = [layer.name for layer in early] + (["semantic recall"] if recalled else []) + [layer.name for layer in late]
    return (
        *(layer.name for layer in layers),
        *(in_history(m) for m in sent[:at]),
        *per_turn,
        *(in_history(m) for m in sent[at:]),
        *(layer.name for layer in closing),
    )


def _in_request_order(blocks: list[ContextBlock], system: int, early: int, late: int) -> tuple[ContextBlock, ...]:
    """The report's blocks in the order the request carries them: the system layers, tools, compaction
    summaries, the per-turn blocks (semantic recall before the late ones), then history and closing blocks."""
    head, per_turn = blocks[:system], blocks[system : system + early + late]
    rest = blocks[system + early + late :]
    named = {name: [b for b in rest if b.name == name] for name in ("tools", "compaction summary", "semantic recall")}
    others = [b for b in rest if b.name not in named]
    return tuple(
        head + named["tools"] + named["compaction summary"] + per_turn[:early] + named["semantic recall"] + per_turn[early:] + others
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


def _skills_shown(block: SkillsBlock | None) -> tuple[tuple[str, str], ...]:
    if block is None:
        return ()
    return tuple((n, "full") for n in block.full) + tuple((n, "compact") for n in block.compact)


def _skills_layer(
    skills: SkillsInput,
    layers: list[PromptLayer],
    history: list[HistoryItem],
    budget: Budget,
    counter: TokenCounter,
    calibration: Calibration,
    tools_tokens: int,
) -> SkillsBlock:
    """The skills layer within its share of the budget; `auto` goes compact when what remains is small."""
    from .skills_block import SKILLS_SHARE, UNBUDGETED_SKILLS_TOKENS, fit_skills, resolve_mode

    def measure(text: str) -> int:
        return calibration.apply(counter.count(text) + MESSAGE_OVERHEAD)

    if not skills.loadable:  # nothing may point to load_skill: matched skills go in full or not at all
        allowance = int(budget.available * SKILLS_SHARE) if budget.available else UNBUDGETED_SKILLS_TOKENS
        return fit_skills(skills, mode="full", allowance=allowance, measure=measure)
    if not budget.available:
        mode = resolve_mode(skills.prompt_mode, None)
        return fit_skills(skills, mode=mode, allowance=UNBUDGETED_SKILLS_TOKENS, measure=measure)
    others = sum(counter.count(layer.text) + MESSAGE_OVERHEAD for layer in layers)
    used = calibration.apply(others + tools_tokens + REQUEST_OVERHEAD + sum(i.tokens for i in history))
    mode = resolve_mode(skills.prompt_mode, budget.available - used)
    return fit_skills(skills, mode=mode, allowance=int(budget.available * SKILLS_SHARE), measure=measure)


def _recall_block(
    entries: tuple[RecallEntry, ...] | list[RecallEntry], allowance: int, counter: TokenCounter, calibration: Calibration
) -> tuple[str, tuple[int, ...]]:
    """The recall block within `allowance` calibrated tokens (its message framing included)."""
    if allowance <= MESSAGE_OVERHEAD:
        return "", ()
    return fit_recall(entries, allowance, lambda text: calibration.apply(counter.count(text) + MESSAGE_OVERHEAD))
