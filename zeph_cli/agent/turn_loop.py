"""The steps of one turn: prepare the context, send, store the reply, run its tool calls, repeat.

Invariant: the only check before a request leaves is the budget's (`budget_problem`):
a request that cannot fit ends the turn instead of being sent; each step is closed in
order when the caller stops early, so its clean-up (a partial reply, "not completed"
results for unanswered calls) is written before the turn ends; the turn ends when the
model answers without tools, a provider error ends it, or the round limit is reached.
Every step takes the `TurnState` and the `TurnDeps` (`turn.py`), never the Agent.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
from collections.abc import AsyncGenerator
from typing import TYPE_CHECKING

from ..context.invariant import budget_problem
from ..errors import ContextBudgetExceeded, ProviderError
from ..messages import ReplyBuilder, TextDelta
from ..providers.base import ChatRequest
from ..tokens import NEEDS_EXACT
from .bounds import compaction_may_act, provisional_due
from .events import (
    AgentEvent,
    AgentWarning,
    CompactionFinished,
    ContextPrepared,
    ReplyDelta,
    TurnFailed,
)
from .replies import reply_cap, save_partial, store_reply
from .turn import TurnDeps, TurnState, withdraw_unanswered

if TYPE_CHECKING:
    from ..context.report import ContextReport
    from ..tools.base import ToolSet


async def turn_events(deps: TurnDeps, turn: TurnState) -> AsyncGenerator[AgentEvent, None]:
    """prepare → send → store the reply → run its tool calls, until the model answers without tools."""
    conversation = turn.conversation
    for note in turn.notes:
        yield AgentWarning(note)
    # settled before the tool warnings, which then speak of exact counts where bounds cannot decide
    tools: ToolSet | None = settled_tools(deps, turn)
    for warning in deps.tools.warnings(conversation):
        yield warning
    if turn.prompt_problem:
        yield AgentWarning(turn.prompt_problem)
    if deps.compactor_built():  # one built by an earlier turn: a new turn for it
        deps.compactor().start_turn()
    while True:
        turn.retry = False
        tools = tools if tools is not None else settled_tools(deps, turn)
        builder = ReplyBuilder()
        # Each step is closed in order when the caller stops early, so its clean-up (a partial reply,
        # "not completed" results for unanswered calls) is written before the turn ends.
        for step in (prepare(deps, turn, tools), send(deps, turn, tools, builder)):
            async with contextlib.aclosing(step) as events:
                async for event in events:
                    yield event
            if turn.ended or turn.retry:
                break
        if turn.ended:
            return
        if turn.retry:
            tools = None  # settled again: the context or the tools changed
            continue
        async with contextlib.aclosing(store_reply(deps, turn, builder)) as events:
            async for event in events:
                yield event
        if turn.ended:
            return
        async with contextlib.aclosing(run_tool_round(deps, turn, tools)) as events:
            async for event in events:
                yield event
        await deps.compactor().after_tool_round(turn.conversation)
        tools = None


def may_compact(deps: TurnDeps, report: ContextReport, provisional: bool) -> bool:
    """Whether the compactor could act before this request; when not, it is not even built (imported)."""
    return compaction_may_act(deps.memory, report, provisional, compactor_built=deps.compactor_built())


def settled_tools(deps: TurnDeps, turn: TurnState) -> ToolSet:
    """The tools to offer, with the counter made exact first if token bounds could change the request.

    Each bound builds the request (tools, messages, reply cap); compaction, a budget problem or a
    note (its figures are the user's) always want exact counts. Compaction runs on exact counts."""
    conversation, system = turn.conversation, turn.system
    provisional = provisional_due(deps.history(conversation))

    def request(tools: ToolSet) -> object:
        messages, report, _ = deps.context_for(conversation, system, tools)
        if may_compact(deps, report, provisional) or budget_problem(report) is not None or report.notes:
            return NEEDS_EXACT
        return tools.names(), tools.compact, messages, request_cap(deps, report)

    return deps.tools.settled(request)


def request_cap(deps: TurnDeps, report: ContextReport) -> int:
    """`max_tokens` for the request `report` describes."""
    profile = deps.profile()
    assert profile is not None, "call start() first"
    return reply_cap(deps.llm.max_tokens, profile, report)


async def prepare(deps: TurnDeps, turn: TurnState, tools: ToolSet) -> AsyncGenerator[AgentEvent, None]:
    """Compaction as the context needs it, then the request's messages and report; ends the turn
    when the request cannot fit the budget (the one check before a request leaves)."""
    conversation = turn.conversation
    turn.messages, turn.report, turn.raw_estimate = deps.context_for(conversation, turn.system, tools)
    compacted = False
    if may_compact(deps, turn.report, provisional_due(deps.history(conversation))):
        async for event in deps.compactor().before_request(conversation, turn.report):
            compacted = True
            if isinstance(event, CompactionFinished):
                turn.changes.append(event.result.describe())
            yield event
    if compacted:
        turn.messages, turn.report, turn.raw_estimate = deps.context_for(conversation, turn.system, tools)
    if turn.changes:
        turn.report, turn.changes = dataclasses.replace(turn.report, compaction=tuple(turn.changes)), []
    yield ContextPrepared(turn.report)  # its notes (a summary over its share, history not sent) are for
    # `zeph context` and /context: nothing the user could do about them on every turn
    problem = budget_problem(turn.report)
    if problem is not None:
        turn.ended = True
        yield TurnFailed(ContextBudgetExceeded(problem), prompt_withdrawn=withdraw_unanswered(deps.store, turn, problem))


async def send(deps: TurnDeps, turn: TurnState, tools: ToolSet, builder: ReplyBuilder) -> AsyncGenerator[AgentEvent, None]:
    """Stream one request into `builder`; a provider error ends the turn or asks for a retry."""
    profile = deps.profile()
    assert profile is not None and turn.report is not None
    dump = deps.dump
    turn.dump_id = dump.request(provider=deps.provider.name, model=deps.model_label, report=turn.report) if dump else None
    request = ChatRequest(
        messages=tuple(turn.messages),
        tools=tools.specs(),
        max_tokens=request_cap(deps, turn.report),
        temperature=deps.llm.temperature,
        stream=turn.stream,
        context_window=turn.report.budget or profile.context_window,
        wire_tap=dump.tap(turn.dump_id) if dump else None,
    )
    turn.max_tokens = request.max_tokens
    try:
        async for event in deps.provider.stream(request):
            builder.add(event)
            if isinstance(event, TextDelta) and event.text:
                yield ReplyDelta(event.text)
    except ProviderError as exc:
        from .provider_errors import on_provider_error  # a turn without errors never imports it

        async for reported in on_provider_error(deps, turn, request, builder, exc):
            yield reported
    except (asyncio.CancelledError, KeyboardInterrupt):
        turn.answered = keep_partial(deps, turn, builder, "interrupted") is not None or turn.answered
        raise
    except GeneratorExit:  # the caller stopped reading mid-reply (its output closed)
        turn.answered = keep_partial(deps, turn, builder, "stopped") is not None or turn.answered
        raise


def keep_partial(deps: TurnDeps, turn: TurnState, builder: ReplyBuilder, reason: str) -> int | None:
    """Store what arrived of a reply cut short (marked `partial`, with `reason`); its id, or None."""
    return save_partial(deps.store, deps.counter(), deps.model_label, turn.conversation.id, builder, reason)


async def run_tool_round(deps: TurnDeps, turn: TurnState, tools: ToolSet) -> AsyncGenerator[AgentEvent, None]:
    """Run the calls of the stored reply (`turn.parsed`) and store each result."""
    from .tool_rounds import run_calls, save_result  # the reply called tools: a plain reply never imports them

    conversation = turn.conversation
    calls = run_calls(
        deps.runner(conversation, tools),
        deps.sandbox_notice,
        lambda result, metadata: save_result(deps.store, deps.counter(), conversation.id, result, metadata),
        turn.parsed,
    )
    async with contextlib.aclosing(calls) as events:
        async for event in events:
            yield event
