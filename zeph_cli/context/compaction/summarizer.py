"""Summarizing a compaction range through an injected `summarize(prompt) -> str`.

Invariant: `summarize_range` never raises (only cancellation passes through)
and always returns a summary starting with "[compaction summary]". Order:
chunked (at most `concurrency` calls at once) then merged, else one pass over
the whole range; on a context-length error the range is retried with 10%,
20%, 50%, 100% of tool responses removed middle-out; when nothing works, the
metadata-only summary. Summarizing a summary again loses none of its fact
lines: those the summarizer dropped follow its summary verbatim. An anchored
last pass (the whole range, or the merge of its chunks) whose reply fails
validation is asked once more with the error stated, then the nine-section
summary is asked for instead.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field

from ...errors import ContextLengthExceeded, is_context_length_message
from ...tokens import TokenCounter
from ..assembler import HistoryItem
from .anchored import WIRE, anchored_merge_prompt, anchored_prompt, read_anchored, render, retry_prompt
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
    anchored: bool = False  # the text is an anchored summary (its sections rendered)
    errors: tuple[str, ...] = ()  # one line per failed call or unusable reply, for the log
    # The anchored last pass: "" (not asked for), "first" (valid at once), "retry" (valid when asked again
    # with the error), "fallback" (both replies unusable: the nine-section summary was asked for).
    anchored_try: str = ""


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
    wire: str = WIRE  # how the anchored sections are asked for (anchored.WIRES)
    attempts: int = 0
    produced_anchored: bool = False
    anchored_try: str = ""
    errors: list[str] = field(default_factory=list)

    async def call(self, prompt: str, *, empty_ok: bool = False) -> str:
        self.attempts += 1
        try:
            reply = await self.summarize(prompt)
        except Exception as exc:
            too_long = isinstance(exc, ContextLengthExceeded) or is_context_length_message(str(exc))
            self.errors.append(_describe(exc))
            raise _CallFailed(_describe(exc), too_long) from exc
        if empty_ok and isinstance(reply, str):
            return reply.strip()
        if not isinstance(reply, str) or not reply.strip():
            self.errors.append("the summarizer returned an empty reply")
            raise _CallFailed("empty reply", False)
        return reply.strip()

    async def final(self, anchored_request: str, structured_request: str) -> str:
        """The last pass: anchored when asked for and valid at the first or second try (asked again with
        what was wrong), else the 9-section text. A failed call is a failure of the pass, as for any call;
        an empty reply is an unusable one."""
        self.produced_anchored = False
        if self.anchored:
            request = anchored_request
            for attempt in ("first", "retry"):
                reply = await self.call(request, empty_ok=True)
                summary, problem = read_anchored(reply, self.wire) if reply else (None, "the reply was empty")
                if summary is not None:
                    self.produced_anchored, self.anchored_try = True, attempt
                    return render(summary)
                self.errors.append(f"anchored summary ({attempt} try): {problem}")
                request = retry_prompt(anchored_request, problem)
            self.errors.append("the anchored summary failed validation twice; asked for the nine-section summary")
            self.anchored_try = "fallback"
        return await self.call(structured_request)

    async def single(self, items: list[HistoryItem]) -> str:
        transcript = render_transcript(items)
        return await self.final(anchored_prompt(transcript, self.wire), compaction_prompt(transcript, limit_tokens=self.limit_tokens))

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
        return await self.final(anchored_merge_prompt(partials, self.wire), merge_prompt(partials, limit_tokens=self.limit_tokens))

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
    anchored: bool | str = False,
    limit_tokens: int | None = None,
    single_fallback: bool = True,
) -> SummaryOutcome:
    """Summarize `items` (a compaction range); see the module invariant for the order of attempts.

    `limit_tokens` (e.g. proactive `max_summary_tokens`) is stated in the prompt, not enforced.
    `single_fallback=False` (with `concurrency=1`: one failed call ends the attempt) is for asking a
    summarizer that was down whether it answers again. `anchored` asks for the anchored sections in the
    last pass (True: as Markdown headings; "markdown" or "json": so asked), the nine sections when that fails.
    """
    wire = anchored if isinstance(anchored, str) and anchored else WIRE
    run = _Run(summarize, counter, chunk_tokens, concurrency, bool(anchored), limit_tokens, single_fallback, wire)

    earlier = [item.message.content for item in items if is_compaction_summary(item)]

    def outcome(body: str, method: str, fraction: float = 0.0) -> SummaryOutcome:
        anchored_text = run.produced_anchored and method != "metadata"
        if method != "metadata":
            body = carry_earlier_facts(earlier, body)
        return SummaryOutcome(f"{SUMMARY_MARKER}\n{body}", method, run.attempts, fraction, anchored_text, tuple(run.errors),
                              run.anchored_try if method != "metadata" else "")

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
