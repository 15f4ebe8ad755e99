"""One round of tool calls: give each call a valid unique id, run the calls in order, store each result.

Invariant: every tool call stored has exactly one stored result — real, refused, or a
synthetic "not completed" one when the round is cancelled or the round limit is hit —
so the next request is valid on every provider; call ids are unique within the
conversation's agent-visible messages and match what every provider accepts. The
tool-safety modules, and this module, are imported only when a reply calls a tool.
"""

from __future__ import annotations

import asyncio
import re
import uuid
from collections.abc import AsyncGenerator, Callable
from typing import TYPE_CHECKING

from ..context.invariant import tool_output_allowance
from ..messages import Message, ToolCallPart, ToolResultPart
from ..tokens import TokenCounter, count_message
from .events import AgentEvent, AgentWarning, ToolCallFinished, ToolCallStarted

if TYPE_CHECKING:
    from ..config import Config
    from ..context.report import ContextReport
    from ..store import ConversationStore
    from .tool_calls import ToolCallRunner

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
    """Run the calls of one reply in order, `save` each result; on cancellation, answer every unanswered call.
    `take_notice` gives the sandbox's one-time notice (commands are not confined here), if any."""
    done: set[str] = set()
    try:
        for call, problem in parsed:
            tool = runner.tools.get(call.name)
            subject = tool.subject(call.arguments) if tool else ""
            yield ToolCallStarted(call, tool.kind if tool else "", subject)
            outcome = await runner.run(call, problem)
            notice = take_notice()  # once: commands are not confined here
            if notice:
                yield AgentWarning(notice)
            save(
                outcome.result,
                {
                    "decision": outcome.decision,
                    "summary": outcome.summary,
                    "duration_ms": outcome.duration_ms,
                    "exit_code": outcome.exit_code,
                    "kept_output_id": outcome.kept_output_id,
                },
            )
            done.add(call.id)
            yield ToolCallFinished(
                call, outcome.result, outcome.decision, outcome.summary, outcome.duration_ms, outcome.exit_code
            )
    except (asyncio.CancelledError, KeyboardInterrupt, GeneratorExit):
        for call, _ in parsed:
            if call.id not in done:
                save(runner.record_interrupted(call), {"decision": "interrupted"})
        raise
