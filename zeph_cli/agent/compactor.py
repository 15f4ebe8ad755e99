"""Running compaction on a conversation: plans from `context.compaction`, written by the store.

Invariant: compaction never loses what the user can scroll back to. The
originals of a compacted range become agent-invisible and the summary
agent-only in one transaction, together with the event that records it; a
summary is always produced (the metadata summary when every LLM attempt
fails), and a probe HardFail keeps the originals. LLM compaction runs at most
once per turn on its own, and never again in a session once the guard says it
cannot make progress. With a task list, an LLM compaction never summarizes the
messages of an item in progress unless they alone would leave the request over
the hard line (said once per item); their tool outputs are pruned, with the
summary, only when that alone keeps them. Its summary names the completed and
abandoned items it took in (`context.compaction.subgoals`).
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import AsyncGenerator, AsyncIterator, Awaitable, Callable, Sequence
from dataclasses import dataclass

from ..context.compaction import (
    COMPACTION_SUMMARY,
    SUMMARY_MARKER,
    TOOL_SUMMARY,
    CompactionGuard,
    TurnCompactionState,
    apply_deferred,
    clean_pair_summary,
    compaction_range,
    decide,
    pair_to_summarize,
    plan_prune,
    proactive_due,
    condense_prompt,
    cut_summary,
    extractive_summary,
    protect_window,
    pruned_message,
    summarize_range,
    recall_room,
    summary_cap,
    summary_slot,
    tool_pair_prompt,
)
from ..config import Config
from ..context.compaction import provisional
from ..context.compaction.guard import GUARD_KEY
from ..context.compaction.anchored import ANCHORED_HEADER
from ..context.compaction.guidelines import with_guidelines
from ..context.compaction.markers import is_pruned
from ..context.compaction.informative import CARRIED_HEADER, copied_share, normalized, shingles, states_fact
from ..context.compaction.prompts import render_transcript
from ..context.compaction.ranges import SUMMARY_PROMPT_TOKENS, chunk_size, newest_round
from ..context.compaction.result import CompactionResult
from ..context.compaction.subgoals import FALLBACK, Subgoal, SubgoalPlan, closing_lines, plan_range, registry_text
from ..context.compaction.summarizer import carry_earlier_facts
from ..context.probe import VALIDATING_MESSAGE, blocks_compaction, run_probe
from ..context.assembler import HistoryItem, pinned_index
from ..context.recall_block import RECALL_HEADER, RecallEntry
from ..context.report import ContextReport
from .events import AgentEvent, AgentWarning, CompactionFinished, CompactionStarted, CompactionStatus
from ..log import get_logger
from ..messages import Message
from ..store import CompactionStore, Conversation, ConversationStore, StoredMessage, ToolLog
from ..store.transactions import write_transaction
from ..tokens import MESSAGE_OVERHEAD, TokenCounter, count_message

log = get_logger("compaction")

__all__ = ["CompactionDeps", "CompactionResult", "Compactor"]

HARD_SUMMARY_TOKENS = 4096  # reply cap of one hard-compaction summary call
# Lines of the transcript the summarizer was shown, copied into a summary: tool calls, results, placeholders.
TRANSCRIPT_MARKS = ("[tool call]", "[tool result]", "[tool output pruned", "[user]", "[assistant]", "[system]")
HISTORY_BLOCKS = ("history", "compaction summary")
ORIGINALS_GONE = "the provisional summary's originals are gone"
KEPT_ID_SIZE = "ov_00000000"  # an overflow id as `ToolLog.save_output` makes them: a placeholder's size before it is kept
CLOSING_SHARE = 4  # the lines naming the task items a summary closed take at most 1/4 of its slot
EXPANSION_CHUNKS = 6  # a provisional summary's originals are read again up to this many summary chunks


Summarize = Callable[..., Awaitable[str]]  # (prompt, *, max_tokens, purpose) -> text


def _nothing(*_args, **_kwargs) -> None:
    return None


@dataclass(frozen=True)
class _Room:
    """How a summary fills its slot: the lines `facts` refuses, and those that carry nothing, take `others`
    tokens at most (the slot's floor)."""

    others: int | None
    facts: Callable[[str], bool]


@dataclass
class CompactionDeps:
    """What compaction uses of the agent, and nothing more; tests build it from plain fakes."""

    store: ConversationStore
    config: Config
    counter: Callable[[], TokenCounter]  # the current tokenizer (the agent learns its own at start)
    summarize: Summarize  # one plain completion on the provider for `purpose` (summary | probe | compress)
    history: Callable[[Conversation], list[HistoryItem]]  # what the agent may see, with token counts
    report: Callable[[Conversation], ContextReport]  # the context the next request would send
    pinned: Callable[[], int | None] = lambda: None  # the running turn's user message id: never compacted
    guidelines: Callable[[], str] = lambda: ""  # learned preservation rules for summary prompts
    helper_model: Callable[[str], str] = lambda purpose: ""  # model label of a side job, for the probe record
    summarizer_window: Callable[[str], Awaitable[int]] | None = None  # the window of the provider for a purpose
    dump_probe: Callable[[object], None] = _nothing
    dump_compaction: Callable[[dict], None] = _nothing
    ensure_started: Callable[[], Awaitable[object]] | None = None  # before compaction on demand
    recall_entries: Callable[[], Sequence[RecallEntry]] = tuple  # what semantic recall found for the turn
    subgoals: Callable[[Conversation], Sequence[Subgoal]] = lambda c: ()  # the task items' message ranges


class Compactor:
    """One per agent: the session's exhaustion guard and the turn's compaction flag live here."""

    def __init__(self, deps: CompactionDeps) -> None:
        self.deps = deps
        self.store = CompactionStore(deps.store.db)
        self.reset()

    def reset(self) -> None:
        """Forget the session's compaction state (a new or switched session)."""
        self.guard = CompactionGuard()
        self._guard_of: tuple[int, int] | None = None  # (conversation id, prompt budget) `guard` was loaded for
        self.turn = TurnCompactionState()
        self._proactive_off = False
        self._rejected_through = 0  # last message id of a range the probe rejected
        self._warned_over: set[str] = set()  # task items already said to be too large to keep

    def _report(self, conversation: Conversation) -> ContextReport:
        return self.deps.report(conversation)

    # ---- the session's exhaustion guard, kept in its metadata ------------------------------

    def _load_guard(self, conversation: Conversation, capacity: int) -> None:
        """`guard` for `conversation` at a prompt budget of `capacity`: as the session kept it (across
        `zeph ask -c` runs), unless the budget has been raised since it was set."""
        if self._guard_of == (conversation.id, capacity):
            return
        if self._guard_of is None or self._guard_of[0] != conversation.id:
            self.guard = CompactionGuard.from_metadata(conversation.metadata.get(GUARD_KEY), capacity)
        elif self.guard.exhausted and capacity > self.guard.capacity:
            self.guard = CompactionGuard()
        self._guard_of = (conversation.id, capacity)
        if not self.guard.exhausted and conversation.metadata.get(GUARD_KEY) is not None:
            self._save_guard(conversation)  # set at a smaller budget: it no longer holds

    def _save_guard(self, conversation: Conversation) -> None:
        """Keep `guard` in the session's metadata (when it changed)."""
        if not conversation.id:
            return
        if self.guard.exhausted and not self.guard.capacity and self._guard_of:
            self.guard.capacity = self._guard_of[1]
        kept = self.guard.to_metadata()
        if self.deps.store.get_conversation(conversation.id).metadata.get(GUARD_KEY) != kept:
            self.deps.store.set_metadata(conversation.id, GUARD_KEY, kept)

    def forget_exhaustion(self, conversation: Conversation) -> None:
        """A fresh start for compaction in `conversation` (`/clear`): its guard is reset, here and as kept."""
        self.guard = CompactionGuard()
        self._guard_of = None
        self._save_guard(conversation)

    def start_turn(self) -> None:
        self.turn.start_turn()

    def _in_cooldown(self, conversation: Conversation) -> bool:
        """Fewer than `compaction_cooldown_turns` user turns since the newest compaction summary: no new one
        yet (trimming keeps every request within the budget meanwhile). Read from the history, so it holds
        across `zeph ask -c` processes too."""
        history = self.deps.history(conversation)
        summaries = [item.id for item in history if item.metadata.get(COMPACTION_SUMMARY)]
        if not summaries:
            return False
        newest = max(summaries)
        turns = sum(1 for item in history if item.id > newest and item.message.role == "user")
        return turns < self.deps.config.memory.compaction_cooldown_turns

    # ---- the context-management phase before each request ---------------------------------

    async def before_request(
        self, conversation: Conversation, report: ContextReport | None = None
    ) -> AsyncIterator[AgentEvent]:
        """Proactive compression, else the reactive tiers: soft (no LLM), then hard if still over.

        `report` is the context as it stands, when the caller has it; any event
        yielded means the context changed.
        """
        memory = self.deps.config.memory
        report = report or self._report(conversation)
        if not report.capacity:
            return
        self._load_guard(conversation, report.capacity)
        if memory.compression.strategy == "proactive" and not self.turn.compacted_this_turn:
            fired = False
            async for event in self._proactive(conversation, report):
                fired = True
                yield event
            if fired:
                return
        async for event in self._tiers(conversation, report):
            yield event
        if not self.turn.compacted_this_turn and not self._mid_turn(conversation):
            async for event in self._redo_provisional(conversation):  # no summary ran this turn to redo it
                yield event

    async def _tiers(self, conversation: Conversation, report: ContextReport) -> AsyncIterator[AgentEvent]:
        """The reactive tiers: soft (no LLM), the hard tier's pruning, then its LLM summary if still over."""
        memory = self.deps.config.memory
        soft, hard = memory.soft_compaction_threshold, memory.hard_compaction_threshold
        tier = decide(report.context_tokens, report.capacity, soft, hard)
        if tier == "none":
            return
        result = self.soft(conversation)
        if result is not None:
            yield CompactionStarted(result.kind)
            yield CompactionFinished(result)
            report = self._report(conversation)
        if decide(report.context_tokens, report.capacity, soft, hard) != "hard":
            return
        # The hard tier prunes the outputs a summary would take in when that alone is enough, or when no
        # summary may run now; otherwise the summary reads them whole.
        summary_now = self._summary_allowed(conversation, report)
        pruning = self._pruning_saves(conversation, report.capacity)
        if not summary_now or decide(report.context_tokens - pruning, report.capacity, soft, hard) != "hard":
            result = self.soft(conversation, before_summary=True)
            if result is not None:
                yield CompactionStarted(result.kind)
                yield CompactionFinished(result)
            return
        async for event in self._automatic_summary(conversation, "hard", None):
            yield event

    def _summary_allowed(self, conversation: Conversation, report: ContextReport) -> bool:
        """Whether the hard tier may run an LLM summary now."""
        if self.guard.exhausted or self.turn.compacted_this_turn:  # one LLM compaction per turn at most
            return False
        if self._mid_turn(conversation) and report.context_tokens <= report.capacity:
            return False  # the running turn's own outputs: prunable once it ends, not worth a summary now
        return not (self._cooling_down(conversation, "hard") or self._in_cooldown(conversation))

    def _pruning_saves(self, conversation: Conversation, capacity: int) -> int:
        """Tokens the hard tier's pruning would free (without doing it)."""
        history = self.deps.history(conversation)
        ids = self._prune_plan(history, capacity, before_summary=True)
        counter = self.deps.counter()
        by_id = {item.id: item for item in history}
        return sum(max(by_id[i].tokens - count_message(counter, pruned_message(by_id[i].message, "o" * 12)), 0) for i in ids)

    # ---- provisional summaries -----------------------------------------------------------------

    def _newest_id(self, conversation: Conversation) -> int:
        return max((item.id for item in self.deps.history(conversation)), default=0)

    def _originals(self, conversation: Conversation, summary: HistoryItem) -> list[HistoryItem]:
        counter = self.deps.counter()
        return [
            HistoryItem(message, count_message(counter, message), message_id, metadata)
            for message_id, message, metadata in self.store.originals(conversation.id, summary.id)
        ]

    async def _redo_provisional(self, conversation: Conversation) -> AsyncIterator[AgentEvent]:
        """A provisional summary (made while the summarizer was down) summarized again from its originals
        once its wait is over; while the summarizer still fails, the wait doubles. Held in the summary's
        metadata, so it holds across `zeph ask -c` processes."""
        summary = provisional.due(self.deps.history(conversation))
        if summary is None:
            return
        result: CompactionResult | None = None
        events: list[AgentEvent] = []
        async for item in self._summarize(conversation, "redo", redo=summary):
            if isinstance(item, CompactionResult):
                result = item
            else:
                events.append(item)
        assert result is not None
        if result.skipped == ORIGINALS_GONE:
            self.store.update_metadata(summary.id, {provisional.PROVISIONAL: False})  # nothing to redo it from
            return
        if result.skipped or result.rejected:
            schedule = provisional.retry_schedule(summary, self._newest_id(conversation))
            self.store.update_metadata(summary.id, schedule)
            log.info("provisional summary %s: %s; next try in %d turns", summary.id, result.skipped, schedule[provisional.REDO_WAIT])
            return
        self.turn.mark_compacted()
        yield CompactionStarted("redo")
        for event in events:
            yield event
        yield CompactionFinished(result)

    async def _proactive(self, conversation: Conversation, report: ContextReport) -> AsyncIterator[AgentEvent]:
        """Proactive compression when the context exceeds `threshold_tokens` and there is history to compress.

        A threshold below what the prompt layers and tools take alone would fire
        every turn: it is switched off for the session with one warning, and the
        reactive tiers take over.
        """
        compression = self.deps.config.memory.compression
        threshold = compression.threshold_tokens
        if self._proactive_off or self.guard.exhausted or not proactive_due(report.context_tokens, threshold):
            return
        fixed = report.used_tokens - sum(b.tokens for b in report.blocks if b.name in HISTORY_BLOCKS)
        if fixed >= threshold:
            self._proactive_off = True
            yield AgentWarning(
                f"memory.compression.threshold_tokens ({threshold:,}) is below what the prompt and tool schemas "
                f"take on their own ({fixed:,} tokens): proactive compression is off for this session"
            )
            return
        if len(self._middle(conversation, "proactive")) < 2 or self._cooling_down(conversation, "proactive") or self._in_cooldown(conversation):
            return  # nothing worth compressing yet: not a failure, the guard is not told
        async for event in self._automatic_summary(conversation, "proactive", compression.max_summary_tokens):
            yield event

    def _keep_from(self, history: list[HistoryItem]) -> int | None:
        """Index of the running turn's user message in `history` (None outside a turn)."""
        return pinned_index(history, self.deps.pinned())

    def _mid_turn(self, conversation: Conversation) -> bool:
        """The running turn has had tool rounds: the next request answers tool results."""
        history = self.deps.history(conversation)
        start = self._keep_from(history)
        return start is not None and start < len(history) - 1

    def _middle(self, conversation: Conversation, kind: str) -> list[HistoryItem]:
        """The messages an LLM compaction of `kind` would summarize now: all but the preserved tail and the
        running turn; for the hard tier, a tail too large to leave usage under the soft threshold after the
        summary is shortened, so the next turn does not compact again."""
        memory = self.deps.config.memory
        history = self.deps.history(conversation)
        report = self._report(conversation)
        tail_tokens = None
        if report.capacity and kind == "hard":
            cap = summary_cap(report.capacity, report.fixed_tokens, memory.compression.max_summary_tokens)
            tail_tokens = max(int(memory.soft_compaction_threshold * report.capacity) - report.fixed_tokens - cap, 0)
        return compaction_range(history, memory.compaction_preserve_tail, self._keep_from(history), tail_tokens)[0]

    def _cooling_down(self, conversation: Conversation, kind: str) -> bool:
        """After a probe HardFail, wait for new messages: the same range would be summarized (and rejected) again;
        with fewer than 2 messages to summarize, nothing can run."""
        middle = self._middle(conversation, kind)
        if len(middle) < 2:
            return False  # the attempt finds too little to summarize: that is the guard's to judge
        return bool(self._rejected_through) and middle[-1].id == self._rejected_through

    async def _automatic_summary(
        self, conversation: Conversation, kind: str, limit_tokens: int | None
    ) -> AsyncIterator[AgentEvent]:
        """One guarded LLM compaction (hard tier or proactive); it ends this turn's compaction."""
        self.turn.mark_compacted()
        yield CompactionStarted(kind)
        result: CompactionResult | None = None
        async for item in self._summarize(conversation, kind, limit_tokens=limit_tokens):
            if isinstance(item, CompactionResult):
                result = item
            else:
                yield item
        assert result is not None
        yield CompactionFinished(result)
        if not result.rejected:  # a HardFail is a cooldown, not exhaustion
            self._check_progress(conversation, kind, result)
        warning = self.guard.warning_once()
        self._save_guard(conversation)
        if warning:
            log.warning("%s", " ".join(warning.split()))
            yield AgentWarning(warning)

    def _check_progress(self, conversation: Conversation, kind: str, result: CompactionResult) -> None:
        """The loop guard after an automatic attempt; "still over" means over the line that triggered it."""
        if result.skipped:
            self.guard.check(result.messages_compacted)
            return
        memory = self.deps.config.memory
        report = self._report(conversation)
        if kind == "proactive":
            still_over = proactive_due(report.context_tokens, memory.compression.threshold_tokens)
        else:
            tier = decide(report.context_tokens, report.capacity, memory.soft_compaction_threshold, memory.hard_compaction_threshold)
            still_over = tier == "hard"
        self.guard.check(result.messages_compacted, result.tokens_before, result.tokens_after, still_over)

    # ---- the soft tier ---------------------------------------------------------------------

    def soft(self, conversation: Conversation, *, before_summary: bool = False) -> CompactionResult | None:
        """Apply deferred tool-pair summaries and prune old tool outputs; None when there is nothing to do.

        `before_summary`: the hard tier's first step. Only the preserved tail
        (`compaction_preserve_tail` messages before the running turn) is
        protected: every other output is one an LLM summary would take in
        anyway, and pruning keeps it readable by its overflow id for free.
        """
        deps = self.deps
        history = deps.history(conversation)
        keep_from = self._keep_from(history)
        unpinned, pinned = (history, []) if keep_from is None else (history[:keep_from], history[keep_from:])
        unpinned, applied = apply_deferred(unpinned, deps.counter())
        history = unpinned + pinned
        report = self._report(conversation)
        prune_ids = self._prune_plan(history, report.capacity, before_summary=before_summary, pinned_from=len(unpinned))
        if not applied and not prune_ids:
            return None
        by_id = {item.id: item for item in history}
        replacements = {i: pruned_message(by_id[i].message, self._kept_output(conversation, by_id[i])) for i in prune_ids}
        before = report.context_tokens
        counter = deps.counter()
        with write_transaction(deps.store.db):
            for summary in applied:
                self.store.apply_tool_summary(
                    conversation.id,
                    summary.hidden_ids,
                    summary.message,
                    metadata={TOOL_SUMMARY: True},
                    token_count=summary.item.tokens,
                    token_counter=counter.name,
                )
            pruned, after = self._store_pruned(conversation, replacements, before, counter)
        return CompactionResult("soft", before, after, outputs_pruned=len(pruned), summaries_applied=len(applied))

    def _store_pruned(
        self, conversation: Conversation, replacements: dict[int, Message], before: int, counter: TokenCounter
    ) -> tuple[list[StoredMessage], int]:
        """Prune the tool outputs `replacements` replaces and record the soft event, within the caller's
        transaction; (the pruned copies, the context's tokens after)."""
        pruned = self.store.prune_tool_outputs(
            conversation.id,
            replacements,
            token_counts={i: count_message(counter, m) for i, m in replacements.items()},
            token_counter=counter.name,
        )
        after = self._report(conversation).context_tokens
        self.store.record_event(
            conversation.id, "soft", tokens_before=before, tokens_after=after, outputs_pruned=len(pruned)
        )
        return pruned, after

    def _prune_plan(
        self, history: list[HistoryItem], capacity: int, *, before_summary: bool, pinned_from: int | None = None
    ) -> list[int]:
        """Ids of the tool messages in `history` to prune (`pinned_from`: where the running turn starts)."""
        memory = self.deps.config.memory
        if pinned_from is None:
            start = self._keep_from(history)
            pinned_from = len(history) if start is None else start
        protect = protect_window(memory.prune_protect_tokens, capacity)
        preserved_from = max(pinned_from - memory.compaction_preserve_tail, 0) if before_summary else None
        newest = newest_round(history, pinned_from) if pinned_from < len(history) else None
        return plan_prune(history, protect, newest, protected_from=preserved_from)

    def _kept_output(self, conversation: Conversation, item: HistoryItem) -> str | None:
        """The overflow id the full output of a tool message is kept under (kept now if it was not yet),
        so a pruned output can be read again with read_overflow."""
        kept = item.metadata.get("kept_output_id")
        if isinstance(kept, str) and kept:
            return kept
        results = item.message.tool_results
        if len(results) != 1:
            return None
        return ToolLog(self.deps.store.db).save_output(conversation.id, results[0].tool_call_id, results[0].content)

    # ---- LLM compaction ---------------------------------------------------------------------

    async def _summarize(
        self,
        conversation: Conversation,
        kind: str,
        *,
        limit_tokens: int | None = None,
        purpose: str = "summary",
        redo: HistoryItem | None = None,
    ) -> AsyncIterator[AgentEvent | CompactionResult]:
        """Summarize everything before the preserved tail; yields status events, then the result.

        `redo`: a provisional summary to replace, summarized from its originals;
        when the summarizer still fails, it stays as it is (result `skipped`).
        """
        deps = self.deps
        before = self._report(conversation).context_tokens
        visible = self._middle(conversation, kind) if redo is None else [redo]
        subgoals = list(deps.subgoals(conversation)) if redo is None else []
        plan = self._plan(conversation, kind, visible, subgoals) if subgoals else None
        prune: list[HistoryItem] = []  # active tool outputs pruned with the summary, for it to fit beside them
        freed = 0
        if plan is not None and plan.mode == FALLBACK:
            plan, prune, freed = self._plan_pruning_active(conversation, kind, visible, subgoals, plan)
        candidate_end = visible[-1].id if visible else 0  # what `_cooling_down` compares after a rejection
        if plan is not None:
            visible = plan.summarize
            if plan.over is not None and plan.over[0].item_id not in self._warned_over:
                goal, tokens = plan.over
                self._warned_over.add(goal.item_id)
                log.warning("task %s in progress takes %d tokens: summarized with the rest", goal.item_id, tokens)
                yield AgentWarning(
                    f"task {goal.item_id} '{goal.text}' is in progress, but its messages ({tokens:,} tokens) "
                    "do not fit the context beside a summary: they are summarized with the rest"
                )
        if len(visible) < 2 and redo is None:
            where = "outside the tasks in progress" if plan is not None and plan.active else "before the preserved tail"
            yield CompactionResult(kind, before, before, len(visible), skipped=f"fewer than 2 messages {where}")
            return
        report = self._report(conversation)
        factor = self._calibration(report)
        max_summary = limit_tokens or deps.config.memory.compression.max_summary_tokens
        slot = summary_slot(
            report.capacity, report.fixed_tokens, max_summary,
            soft_threshold=deps.config.memory.soft_compaction_threshold,
            hard_threshold=deps.config.memory.hard_compaction_threshold,
            recall_tokens=recall_room(report.capacity, report.fixed_tokens, self._recall_tokens(report)),
            **self._kept_tokens(conversation, visible, report, freed),
        )
        cap = int(slot / factor)  # the slot is in the report's (calibrated) tokens, the summary in the tokenizer's
        # The reply and its marker line fit the slot: a summary cut at max_tokens needs no condensing call.
        reply_cap = max(min(HARD_SUMMARY_TOKENS, cap - deps.counter().count(SUMMARY_MARKER + "\n") - 2), 1)
        chunk_tokens, window = await self._chunk_tokens(purpose, reply_cap, report.budget)
        # What is summarized: a provisional summary stands for its originals, which the summarizer now sees,
        # within a few chunks' worth (beyond that its kept sentences stand in for them).
        start = visible if redo is None else self._originals(conversation, redo)
        if plan is not None and plan.hardest:  # completed and abandoned work: its outputs as placeholders
            start = [self._placeholder(item) if item.id in plan.hardest else item for item in start]
        limit = max(sum(item.tokens for item in start), EXPANSION_CHUNKS * chunk_tokens)
        middle = provisional.expand(start, lambda item: self._originals(conversation, item), limit)
        if redo is not None and not middle:
            yield CompactionResult(kind, before, before, skipped=ORIGINALS_GONE)
            return

        guidelines = deps.guidelines()  # learned from earlier losses ([memory.compression_guidelines])

        async def summarize(prompt: str) -> str:
            return await deps.summarize(with_guidelines(prompt, guidelines), max_tokens=reply_cap, purpose=purpose)

        # A redo asks a summarizer that was down: one call at a time, and the first failure ends the attempt.
        # A failed chunked pass is followed by a single pass only when the whole range fits the window.
        fits = not window or sum(item.tokens for item in middle) + reply_cap + SUMMARY_PROMPT_TOKENS <= window
        # After a failure (a provisional summary in the range), chunks go one at a time: a summarizer still
        # down costs one call, not one per chunk in flight.
        failed_before = redo is not None or any(provisional.is_provisional(item) for item in visible)
        retry = {"single_fallback": fits and redo is None, **({"concurrency": 1} if failed_before else {})}
        outcome = await summarize_range(
            middle, summarize, counter=deps.counter(), limit_tokens=cap, chunk_tokens=chunk_tokens,
            anchored=deps.config.memory.compression.summary_format == "anchored", **retry
        )
        for error in outcome.errors:
            log.warning("%s summary call: %s", kind, error)
        fallback = outcome.method == "metadata"
        if fallback and redo is not None:
            yield CompactionResult(kind, before, before, skipped="the summarizer still does not answer")
            return
        room = self._room(report, middle, max_summary)
        # The items it closed take a quarter of the slot at most; the body the rest.
        counter = deps.counter()
        closing_room = cap // CLOSING_SHARE - counter.count("\n\n")
        closing = closing_lines(plan, counter.count, closing_room) if plan is not None else ""
        body_cap = cap - counter.count(closing + "\n\n") if closing else cap
        if fallback:
            log.warning("%s: every summary call failed, so the metadata summary keeps their most telling sentences until the summarizer answers again", kind)
            text = extractive_summary(middle, body_cap, deps.counter(), others_tokens=room.others)
            outcome = dataclasses.replace(outcome, text=f"{SUMMARY_MARKER}\n{text}")
        else:
            outcome = dataclasses.replace(outcome, text=await self._fit_slot(outcome.text, body_cap, purpose, room))
        if closing:  # the items this summary closed, named by the registry, not left to the summarizer
            body = outcome.text.removeprefix(SUMMARY_MARKER).lstrip("\n")
            outcome = dataclasses.replace(outcome, text=f"{SUMMARY_MARKER}\n{closing}\n\n{body}")
        probe_config = deps.config.memory.compression.probe
        verdict, score = None, None
        if probe_config.enabled and not fallback:
            yield CompactionStatus(VALIDATING_MESSAGE)
            probe = await run_probe(
                middle,
                outcome.text,
                lambda prompt: deps.summarize(prompt, max_tokens=1024, purpose="probe"),
                probe_config,
                model=deps.helper_model("probe"),
            )
            deps.dump_probe(probe)
            verdict, score = probe.verdict, probe.score
            if verdict in ("SoftFail", "HardFail", "Error"):
                log.warning("compaction probe %s (score %.2f, threshold %.2f)%s", verdict, score, probe.threshold,
                            f": {probe.detail}" if probe.detail else "")
            if blocks_compaction(probe):
                self.store.record_event(
                    conversation.id,
                    kind,
                    tokens_before=before,
                    tokens_after=before,
                    method=outcome.method,
                    probe_verdict=verdict,
                    probe_score=score,
                )
                if redo is None:
                    self._rejected_through = candidate_end
                yield CompactionResult(kind, before, before, 0, outcome.method, probe_verdict=verdict, probe_score=score)
                return
        summary = Message.context(outcome.text)
        with write_transaction(deps.store.db):
            if prune:  # the active outputs the plan counted pruned, now that the summary is stored with them
                replacements = {item.id: pruned_message(item.message, self._kept_output(conversation, item))
                                for item in prune}
                self._store_pruned(conversation, replacements, before, deps.counter())
            stored = self.store.replace_with_summary(
                conversation.id,
                [item.id for item in visible],
                summary,
                metadata={COMPACTION_SUMMARY: True, "method": outcome.method, "attempts": outcome.attempts,
                          **(provisional.first_schedule(visible, deps.config.memory.compaction_cooldown_turns,
                                                        self._newest_id(conversation)) if fallback else {})},
                token_count=count_message(deps.counter(), summary),
                token_counter=deps.counter().name,
            )
            after = self._report(conversation).context_tokens
            self.store.record_event(
                conversation.id,
                kind,
                tokens_before=before,
                tokens_after=after,
                messages_compacted=len(middle if redo else visible),
                method=outcome.method,
                probe_verdict=verdict,
                probe_score=score,
            )
        deps.dump_compaction(
            {"kind": kind, "tokens_before": before, "tokens_after": after, "messages_compacted": len(middle if redo else visible),
             "method": outcome.method, "attempts": outcome.attempts, "summary": outcome.text,
             **({"subgoal_registry": registry_text(subgoals, plan)} if subgoals else {})}
        )
        yield CompactionResult(kind, before, after, len(middle if redo else visible), outcome.method, stored.id,
                               probe_verdict=verdict, probe_score=score)

    def _plan(self, conversation: Conversation, kind: str, middle: list[HistoryItem],
              subgoals: list[Subgoal], freed: int = 0) -> SubgoalPlan:
        """`plan_range` for a compaction of `kind`: the automatic ones (hard, a request the provider refused,
        proactive) must free enough for usage to get under their line (the soft line; proactive's
        threshold), so completed and abandoned ranges alone are summarized when they free that; on demand
        (manual, autonomous) everything but the active ranges is. With a budget, active ranges are kept only
        while the request stays under the hard line beside the summary (its floor, `summary_cap`). `freed`:
        tokens `middle` counts pruned that the stored history does not yet (the context is that much less)."""
        memory = self.deps.config.memory
        report = self._report(conversation)
        if not report.capacity:
            return plan_range(middle, subgoals)
        factor = self._calibration(report)
        context = report.context_tokens - math.floor(freed * factor)
        limit = memory.compression.max_summary_tokens
        estimate = summary_cap(report.capacity, report.fixed_tokens, limit)
        line = {
            "hard": int(memory.soft_compaction_threshold * report.capacity),
            "reactive_retry": int(memory.soft_compaction_threshold * report.capacity),
            "proactive": memory.compression.threshold_tokens,
        }.get(kind)
        must_free = None if line is None else math.ceil((context - line + estimate) / factor)
        hard_line = int(memory.hard_compaction_threshold * report.capacity)
        over = math.ceil((context + estimate - hard_line) / factor)
        may_keep = sum(item.tokens for item in middle) - over
        return plan_range(middle, subgoals, must_free=must_free, may_keep=may_keep)

    def _plan_pruning_active(
        self, conversation: Conversation, kind: str, middle: list[HistoryItem], subgoals: list[Subgoal],
        plan: SubgoalPlan,
    ) -> tuple[SubgoalPlan, list[HistoryItem], int]:
        """A FALLBACK `plan` made again as if the tool outputs of its active ranges were pruned (the soft tier's
        placeholder, the output kept for read_overflow: their messages stay, and an output is the one part
        read again cheaply). When that keeps the active ranges, (that plan, the items to prune when the
        summary is stored, the tokens pruning frees); else (`plan`, [], 0): nothing is pruned, and the
        fallback reads every output whole. Nothing is stored here. The preserved tail and the running turn
        are not in `middle`."""
        targets = [item for item in middle if item.id in plan.active and item.message.tool_results and not is_pruned(item)]
        if not targets:
            return plan, [], 0
        sized = {item.id: self._placeholder(item, KEPT_ID_SIZE) for item in targets}
        freed = sum(max(item.tokens - sized[item.id].tokens, 0) for item in targets)
        pruned = [sized.get(item.id, item) for item in middle]
        again = self._plan(conversation, kind, pruned, subgoals, freed)
        if again.mode == FALLBACK:
            return plan, [], 0
        return again, targets, freed

    def _placeholder(self, item: HistoryItem, unkept: str | None = None) -> HistoryItem:
        """`item` with its tool output pruned, naming its size and the overflow id it is kept under (`unkept`
        when it is not kept yet): as the summarizer sees a finished task's output, or as pruning would leave it."""
        kept = item.metadata.get("kept_output_id")
        message = pruned_message(item.message, kept if isinstance(kept, str) and kept else unkept)
        return dataclasses.replace(item, message=message, tokens=count_message(self.deps.counter(), message))

    def _kept_tokens(
        self, conversation: Conversation, summarized: list[HistoryItem], report: ContextReport, freed: int = 0
    ) -> dict:
        """`summary_slot`'s `kept_tokens` (the history that stays verbatim beside a summary of `summarized`)
        and `prunable_tokens` (the tool outputs among it), calibrated as the report's blocks are; `freed`:
        the tokens of kept tool outputs pruned with the summary."""
        gone = {item.id for item in summarized}
        kept = [item for item in self.deps.history(conversation) if item.id not in gone]
        factor = self._calibration(report)
        return {
            "kept_tokens": math.ceil((sum(item.tokens for item in kept) - freed) * factor),
            "prunable_tokens": int(max(sum(item.tokens for item in kept if item.message.tool_results) - freed, 0) * factor),
        }

    def _recall_tokens(self, report: ContextReport) -> int:
        """What the turn's semantic recall block takes with every entry recall found (0: none), calibrated."""
        entries = self.deps.recall_entries()
        if not entries:
            return 0
        text = "\n".join([RECALL_HEADER, *(entry.text for entry in entries)])
        return math.ceil((self.deps.counter().count(text) + MESSAGE_OVERHEAD) * self._calibration(report))

    @staticmethod
    def _calibration(report: ContextReport) -> float:
        """The factor the report's blocks were calibrated by (its tokens over the tokenizer's)."""
        return report.used_tokens / report.raw_tokens if report.raw_tokens else 1.0

    def _room(self, report: ContextReport, middle: list[HistoryItem], max_summary_tokens: int) -> _Room:
        """What may fill the slot above its floor: the summary's own informative lines (cut_summary ranks
        them) and short fact lines kept verbatim; not text copied from the tool outputs summarized (those
        can be read again), nor a summarizer's copy of the conversation (half a line or more in runs of
        words the range said: that is not summarizing, and would fill the slot at every compaction). The
        floor in the tokenizer's tokens (None without a budget)."""
        copied = {normalized(line) for item in middle for result in item.message.tool_results
                  for line in result.content.splitlines()}
        copied |= {normalized(line) for item in middle if item.message.tool_calls
                   for line in render_transcript([item]).splitlines()}  # the calls as the summarizer saw them
        said = shingles([render_transcript(middle)])
        floor = summary_cap(report.capacity, report.fixed_tokens, max_summary_tokens)
        return _Room(
            int(floor / self._calibration(report)) if report.capacity else None,
            lambda line: (normalized(line) not in copied and not line.lstrip("-*• ").startswith(TRANSCRIPT_MARKS)
                          and (states_fact(line) or 2 * copied_share(line, said) < 1)),
        )

    async def _chunk_tokens(self, purpose: str, reply_cap: int, budget: int = 0) -> tuple[int, int]:
        """`chunk_size` for the summarizer `purpose` uses, within the context budget."""
        window = await self.deps.summarizer_window(purpose) if self.deps.summarizer_window else 0
        return chunk_size(window, budget, reply_cap)

    async def _fit_slot(self, text: str, cap: int, purpose: str, room: _Room) -> str:
        """`text` (a summary starting with its marker line) within `cap` tokens, copied and empty lines within
        the slot's floor (`room`): as it is when it fits, else condensed by the summarizer when it is over the
        cap, else cut, least informative lines first. Never longer than the cap."""
        counter = self.deps.counter()
        body = text.removeprefix(SUMMARY_MARKER).strip()
        own = text.partition(f"\n\n{CARRIED_HEADER}")[0]
        if counter.count(own) <= cap:  # within the cap, or only facts carried from an earlier summary are over
            return self._cut(text, body, cap, room)
        try:
            shorter = (await self.deps.summarize(condense_prompt(body, cap), max_tokens=cap, purpose=purpose)).strip()
        except Exception as exc:  # noqa: BLE001 — whatever the summarizer does, the summary is cut instead
            log.warning("condensing an over-long summary failed, it is cut instead: %s", exc)
            shorter = ""
        if shorter:  # condensing is summarizing again: the facts it dropped come back verbatim
            shorter = carry_earlier_facts([body], shorter)
        return self._cut(text, shorter or body, cap, room)

    def _cut(self, text: str, body: str, cap: int, room: _Room) -> str:
        """`body` with its marker line within `cap` tokens, copied and empty lines within `room.others` (`text`:
        the summary as it came). An anchored summary keeps its header line, as the marker is kept."""
        counter = self.deps.counter()
        header = f"{ANCHORED_HEADER}\n" if body.startswith(f"{ANCHORED_HEADER}\n") else ""
        body = body.removeprefix(header)
        marker = counter.count(SUMMARY_MARKER + "\n" + header) + 2
        others = None if room.others is None else room.others - marker
        cut = cut_summary(body, cap - marker, counter, facts=room.facts, others_tokens=others)
        if cut is not body:
            log.info("a summary of %d tokens was cut to fit its %d-token slot: %s", counter.count(text), cap,
                     cut.splitlines()[-1])
        return f"{SUMMARY_MARKER}\n{header}{cut}"

    async def compact(
        self, conversation: Conversation, kind: str = "manual", purpose: str = "summary"
    ) -> AsyncGenerator[AgentEvent, None]:
        """Compaction on demand (`zeph compact`, `/compact`, a context-length error):
        the soft tier, then LLM compaction, whatever the usage; the guard is not consulted."""
        if self.deps.ensure_started is not None:
            await self.deps.ensure_started()
        self.turn.mark_compacted()
        yield CompactionStarted(kind)
        soft = self.soft(conversation)
        if soft is not None:
            yield CompactionFinished(soft)
        async for item in self._summarize(conversation, kind, purpose=purpose):
            yield CompactionFinished(item) if isinstance(item, CompactionResult) else item

    async def on_request(self, conversation: Conversation, strategy: str) -> str:
        """compress_context: "Reactive" runs the soft tier, "Autonomous" LLM compaction (compress provider)."""
        if strategy == "Reactive":
            result = self.soft(conversation)
            if result is None:
                return "nothing to compress: no pending tool summaries and no old tool outputs outside the protected recent tokens"
            return result.describe()
        final: CompactionResult | None = None
        async for event in self.compact(conversation, "autonomous", purpose="compress"):
            if isinstance(event, CompactionFinished) and event.result.kind == "autonomous":
                final = event.result
        assert final is not None
        return final.describe()

    # ---- tool pairs ---------------------------------------------------------------------------

    async def after_tool_round(self, conversation: Conversation) -> bool:
        """Summarize the oldest tool pair into a deferred summary once pairs exceed `tool_call_cutoff`.

        The summary is only stored now; the soft tier applies it. A failed
        summary call leaves the pair as it is. True when a summary was stored.
        """
        deps = self.deps
        if not self._report(conversation).capacity:
            return False
        pair = pair_to_summarize(deps.history(conversation), deps.config.memory.tool_call_cutoff)
        if pair is None or not pair.summary_holder.id:
            return False
        try:
            reply = await deps.summarize(tool_pair_prompt(pair), max_tokens=256, purpose="summary")
        except Exception as exc:  # noqa: BLE001 — the pair stays unsummarized; the next round tries again
            log.warning("tool-pair summary failed, the pair stays as it is: %s", exc)
            return False
        text = clean_pair_summary(reply)
        if not text:
            return False
        self.store.set_deferred_summary(pair.summary_holder.id, text)
        return True
