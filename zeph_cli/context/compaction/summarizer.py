"""Summarizing a compaction range through an injected `summarize(prompt) -> str`.

Invariant: `summarize_range` never raises (only cancellation passes through)
and always returns a summary starting with "[compaction summary]". Order:
chunked (at most `concurrency` calls at once) then merged, else one pass over
the whole range; on a context-length error the range is retried with 10%,
20%, 50%, 100% of tool responses removed middle-out; when nothing works, the
metadata-only summary. Summarizing a summary again loses none of its fact
lines: those the summarizer dropped follow its summary verbatim.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field

from ...errors import ContextLengthExceeded, is_context_length_message
from ...tokens import TokenCounter
from ..assembler import HistoryItem
from .anchored import anchored_merge_prompt, anchored_prompt, parse_anchored, render, validate
from .extractive import NOT_CONTENT
from .fallback import metadata_summary
from .informative import carry_facts
from .markers import SUMMARY_MARKER, is_compaction_summary
from .prompts import chunk_prompt, compaction_prompt, merge_prompt, render_transcript
from .ranges import CHUNK_TOKENS, chunks
from .removal import TIERS, remove_middle_out, removal_count, tool_responses

Summarize = Callable[[str], Awaitable[str]]

CHUNK_CONCURRENCY = 4  # spec: "up to 4 concurrent LLM calls"


@dataclass(frozen=True)
class SummaryOutcome:
    text: str  # the summary message's text; its first line is "[compaction summary]"
    method: str  # "single" | "chunked" | "metadata"
    attempts: int  # summarize calls made, failed ones included
    removal_fraction: float = 0.0  # share of tool responses removed before the summary succeeded
    anchored: bool = False  # the text is an anchored summary (JSON sections rendered)
    errors: tuple[str, ...] = ()  # one line per failed call or unusable reply, for the log


def carry_earlier_facts(earlier: list[str], body: str) -> str:
    """`body`, a new summary of a range holding the `earlier` summaries, followed by the fact lines of
    theirs it no longer states (informative.carry_facts), verbatim and in their order."""
    return carry_facts(earlier, body, skip=lambda line: line.startswith(NOT_CONTENT))


class _CallFailed(Exception):
    def __init__(self, description: str, context_length: bool) -> None:
        super().__init__(description)
        self.context_length = context_length


def _describe(exc: BaseException) -> str:
    return f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__


@dataclass
class _Run:
    summarize: Summarize
    counter: TokenCounter
    chunk_tokens: int
    concurrency: int
    anchored: bool
    limit_tokens: int | None
    single_fallback: bool = True  # a failed chunked pass is followed by a single pass
    attempts: int = 0
    produced_anchored: bool = False
    errors: list[str] = field(default_factory=list)

    async def call(self, prompt: str) -> str:
        self.attempts += 1
        try:
            reply = await self.summarize(prompt)
        except Exception as exc:
            too_long = isinstance(exc, ContextLengthExceeded) or is_context_length_message(str(exc))
            self.errors.append(_describe(exc))
            raise _CallFailed(_describe(exc), too_long) from exc
        if not isinstance(reply, str) or not reply.strip():
            self.errors.append("the summarizer returned an empty reply")
            raise _CallFailed("empty reply", False)
        return reply.strip()

    async def final(self, anchored_request: str, structured_request: str) -> str:
        """The last pass: anchored when asked for and usable, else the 9-section text."""
        if self.anchored:
            summary = parse_anchored(await self.call(anchored_request))
            if summary is not None and not validate(summary):
                self.produced_anchored = True
                return render(summary)
            self.errors.append("the anchored summary was not complete JSON; asked for the structured summary")
        self.produced_anchored = False
        return await self.call(structured_request)

    async def single(self, items: list[HistoryItem]) -> str:
        transcript = render_transcript(items)
        return await self.final(anchored_prompt(transcript), compaction_prompt(transcript, limit_tokens=self.limit_tokens))

    async def chunked(self, parts: list[list[HistoryItem]]) -> str:
        gate = asyncio.Semaphore(max(self.concurrency, 1))
        failed = False

        async def one(index: int, part: list[HistoryItem]) -> str:
            nonlocal failed
            async with gate:
                if failed:  # the chunked pass has failed already: no more calls for it
                    raise _CallFailed("an earlier chunk failed", False)
                try:
                    return await self.call(chunk_prompt(render_transcript(part), index, len(parts)))
                except _CallFailed:
                    failed = True
                    raise

        try:
            async with asyncio.TaskGroup() as group:
                tasks = [group.create_task(one(n, part)) for n, part in enumerate(parts, 1)]
        except ExceptionGroup as failure:
            too_long = any(isinstance(e, _CallFailed) and e.context_length for e in failure.exceptions)
            raise _CallFailed(str(failure.exceptions[0]), too_long) from failure
        partials = [task.result() for task in tasks]
        return await self.final(anchored_merge_prompt(partials), merge_prompt(partials, limit_tokens=self.limit_tokens))

    async def pipeline(self, items: list[HistoryItem]) -> tuple[str, str]:
        """(summary, method): chunked when the range spans several chunks, else (or on failure) single."""
        parts = chunks(items, self.chunk_tokens)
        if len(parts) > 1:
            try:
                return await self.chunked(parts), "chunked"
            except _CallFailed:
                if not self.single_fallback:  # a chunk too long goes to the removal tiers, not a longer pass
                    raise
        return await self.single(items), "single"


async def summarize_range(
    items: list[HistoryItem],
    summarize: Summarize,
    *,
    counter: TokenCounter,
    chunk_tokens: int = CHUNK_TOKENS,
    concurrency: int = CHUNK_CONCURRENCY,
    anchored: bool = False,
    limit_tokens: int | None = None,
    single_fallback: bool = True,
) -> SummaryOutcome:
    """Summarize `items` (a compaction range); see the module invariant for the order of attempts.

    `limit_tokens` (e.g. proactive `max_summary_tokens`) is stated in the prompt, not enforced.
    `single_fallback=False` (with `concurrency=1`: one failed call ends the attempt) is for asking a
    summarizer that was down whether it answers again.
    """
    run = _Run(summarize, counter, chunk_tokens, concurrency, anchored, limit_tokens, single_fallback)

    earlier = [item.message.content for item in items if is_compaction_summary(item)]

    def outcome(body: str, method: str, fraction: float = 0.0) -> SummaryOutcome:
        anchored_text = run.produced_anchored and method != "metadata"
        if method != "metadata":
            body = carry_earlier_facts(earlier, body)
        return SummaryOutcome(f"{SUMMARY_MARKER}\n{body}", method, run.attempts, fraction, anchored_text, tuple(run.errors))

    if not items:
        return outcome(metadata_summary(items), "metadata")
    try:
        return outcome(*await run.pipeline(items))
    except _CallFailed as failure:
        if not failure.context_length:
            return outcome(metadata_summary(items), "metadata")
    available = len(tool_responses(items))
    removed_before = 0
    for fraction in TIERS:
        removed = removal_count(available, fraction)
        if removed == removed_before:
            continue  # the same prompt as the last tier: it would fail the same way
        removed_before = removed
        try:
            body, method = await run.pipeline(remove_middle_out(items, fraction, counter))
            return outcome(body, method, fraction)
        except _CallFailed as failure:
            if not failure.context_length:
                break
    return outcome(metadata_summary(items), "metadata")
