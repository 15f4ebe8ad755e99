"""One round of tool calls: give each call a valid unique id, run the calls in order (consecutive `task`
calls at the same time), store each result in the order of the calls.

Invariant: every tool call stored has exactly one stored result — real, refused, or a
synthetic "not completed" one when the round is cancelled, an error escapes a call, or the round limit is hit —
so the next request is valid on every provider; call ids are unique within the
conversation's agent-visible messages and match what every provider accepts. The
tool-safety modules, and this module, are imported only when a reply calls a tool.
"""

from __future__ import annotations

import asyncio
import re
import uuid
from collections.abc import AsyncGenerator, Callable
from typing import TYPE_CHECKING, cast

from ..context.invariant import tool_output_allowance
from ..messages import Message, ToolCallPart, ToolResultPart
from ..tokens import TokenCounter, count_message
from .events import AgentEvent, AgentWarning, ToolCallFinished, ToolCallStarted

if TYPE_CHECKING:
    from ..config import Config
    from ..context.report import ContextReport
    from ..store import ConversationStore
    from .tool_calls import ToolCallRunner, ToolOutcome

_VALID_CALL_ID = re.compile(r"^[A-Za-z0-9_-]{1,64}$")


def as_stored(call: ToolCallPart) -> ToolCallPart:
    """The call as it is stored (its arguments' secrets redacted); it runs with the real ones."""
    from .tool_calls import call_as_stored

    return call_as_stored(call)


def interrupted(call: ToolCallPart, reason: str) -> ToolResultPart:
    """The "not completed" result stored for a call that did not run."""
    from .tool_calls import interrupted_result

    return interrupted_result(call, reason)


def unique_id(call: ToolCallPart, used: set[str]) -> ToolCallPart:
    """Call ids must be unique in a conversation and acceptable to every provider."""
    call_id = call.id
    if not _VALID_CALL_ID.match(call_id) or call_id in used or re.fullmatch(r"call_\d+", call_id):
        call_id = "call_" + uuid.uuid4().hex[:24]
    used.add(call_id)
    return call if call_id == call.id else ToolCallPart(call_id, call.name, call.arguments)


def save_result(
    store: ConversationStore, counter: TokenCounter, conversation_id: int, result: ToolResultPart, metadata: dict
) -> None:
    """Store one tool result, counted, with the metadata that is set."""
    message = Message("tool", (result,))
    store.add_message(
        conversation_id,
        message,
        token_count=count_message(counter, message),
        token_counter=counter.name,
        metadata={k: v for k, v in metadata.items() if v is not None},
    )


def provider_key_variables(config: Config) -> tuple[str, ...]:
    """The environment variables the configured providers read their API keys from (never passed to commands)."""
    from ..providers import KEY_ENV

    entries = [*config.llm.providers, *([config.llm.summary_provider] if config.llm.summary_provider else [])]
    return tuple(sorted({*KEY_ENV.values(), *(e.api_key_env for e in entries if e.api_key_env)}))


def output_chars(
    report: ContextReport, applied_factor: Callable[[], float], counter: Callable[[], TokenCounter], text: str
) -> int:
    """Characters of `text` that fit the share of the budget a tool output may take now (`report` is the next
    request's; `applied_factor` the calibration's, `counter` an exact one: asked for only when there is a share)."""
    from ..tools.output import MAX_OUTPUT_CHARS

    tokens = tool_output_allowance(report)
    if tokens is None:
        return MAX_OUTPUT_CHARS
    tokens = int(tokens / applied_factor())
    sample = text[: 4 * MAX_OUTPUT_CHARS]
    chars_per_token = len(sample) / max(counter().count(sample), 1)
    return min(MAX_OUTPUT_CHARS, int(tokens * chars_per_token))


async def run_calls(
    runner: ToolCallRunner,
    take_notice: Callable[[], str | None],
    save: Callable[[ToolResultPart, dict], None],
    parsed: list[tuple[ToolCallPart, str | None]],
) -> AsyncGenerator[AgentEvent, None]:
    """Run the calls of one reply in order, `save` each result; on cancellation or an error that escapes a call
    (running calls are cancelled and awaited first), answer every unanswered call, then raise it on.
    Consecutive `task` calls run at the same time (what their sub-agents report is passed on as it comes);
    their results are stored in the order of the calls. `take_notice` gives the sandbox's one-time notice
    (commands are not confined here), if any."""
    done: set[str] = set()
    running: list[asyncio.Task[ToolOutcome]] = []

    def store(call: ToolCallPart, outcome: ToolOutcome) -> ToolCallFinished:
        save(outcome.result, {
            "decision": outcome.decision,
            "summary": outcome.summary,
            "duration_ms": outcome.duration_ms,
            "exit_code": outcome.exit_code,
            "kept_output_id": outcome.kept_output_id,
        })
        done.add(call.id)
        return ToolCallFinished(
            call, outcome.result, outcome.decision, outcome.summary, outcome.duration_ms, outcome.exit_code
        )

    try:
        for batch in batches(runner, parsed):
            for call, _ in batch:
                tool = runner.tools.get(call.name)
                yield ToolCallStarted(call, tool.kind if tool else "", tool.subject(call.arguments) if tool else "")
            if len(batch) == 1 and not concurrent(runner, batch[0][0]):
                call, problem = batch[0]
                running = [asyncio.create_task(runner.run(call, problem))]
                async for report in reports_until_done(runner, running[0]):  # an MCP server's progress, say
                    yield report
                outcome, running = running[0].result(), []
                notice = take_notice()  # once: commands are not confined here
                if notice:
                    yield AgentWarning(notice)
                yield store(call, outcome)
                continue
            running = [asyncio.create_task(runner.run(call, problem)) for call, problem in batch]
            tasks = {call.id: task for (call, _), task in zip(batch, running)}
            stored = 0
            while stored < len(batch):
                for reported in await reports_while(runner, [task for task in running if not task.done()]):
                    yield reported
                for call, _ in batch[stored:]:
                    task = tasks[call.id]
                    if not task.done():
                        break
                    yield store(call, task.result())
                    stored += 1
            running = []
    except BaseException as exc:  # cancelled, interrupted, closed, or an error no call's result holds
        for task in running:
            task.cancel()
        if running:
            await asyncio.gather(*running, return_exceptions=True)  # sub-agents store what they did first
        stopped = isinstance(exc, (asyncio.CancelledError, KeyboardInterrupt, GeneratorExit))
        what = "interrupted by the user before it finished" if stopped else \
            f"the round stopped on an error ({type(exc).__name__}) before it finished"
        finished = {o.result.tool_call_id: o for o in
                    (t.result() for t in running if t.done() and not t.cancelled() and t.exception() is None)}
        for call, _ in parsed:
            if call.id in done:
                continue
            kept = finished.get(call.id)
            if kept is not None:
                store(call, kept)  # it finished before the round was stopped
            else:
                save(runner.record_interrupted(call, what), {"decision": "interrupted"})
        raise
    finally:
        for task in running:
            task.cancel()


async def reports_until_done(
    runner: ToolCallRunner, task: asyncio.Task[ToolOutcome]
) -> AsyncGenerator[AgentEvent, None]:
    """What a running call reports through `ToolContext.progress`, passed on as it comes, until the call ends."""
    while True:
        for reported in await reports_while(runner, [] if task.done() else [task]):
            yield reported
        if task.done():
            return


async def reports_while(runner: ToolCallRunner, waiting: list[asyncio.Task[ToolOutcome]]) -> list[AgentEvent]:
    """Wait until one of `waiting` ends or a call reports something (not at all when none is waiting); what
    the calls reported meanwhile (agent events, by `ToolContext.progress`'s contract), in order."""
    reports: list[AgentEvent] = []
    if waiting:
        getter = asyncio.ensure_future(runner.progress.get())
        try:
            await asyncio.wait([*waiting, getter], return_when=asyncio.FIRST_COMPLETED)
        finally:
            if not getter.done():
                getter.cancel()
        if getter.done() and not getter.cancelled():
            reports.append(cast("AgentEvent", getter.result()))
    while not runner.progress.empty():
        reports.append(cast("AgentEvent", runner.progress.get_nowait()))
    return reports


def concurrent(runner: ToolCallRunner, call: ToolCallPart) -> bool:
    """Whether `call` may run beside its neighbours: a `task` call the session offers."""
    from ..tools.specs import TASK_TOOL

    return call.name == TASK_TOOL and runner.tools.get(call.name) is not None


def batches(
    runner: ToolCallRunner, parsed: list[tuple[ToolCallPart, str | None]]
) -> list[list[tuple[ToolCallPart, str | None]]]:
    """The calls in order, consecutive concurrent ones together, every other call alone."""
    out: list[list[tuple[ToolCallPart, str | None]]] = []
    for item in parsed:
        if out and concurrent(runner, item[0]) and concurrent(runner, out[-1][-1][0]):
            out[-1].append(item)
        else:
            out.append([item])
    return out
