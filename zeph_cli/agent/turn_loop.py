"""The steps of one turn: prepare the context, send, store the reply, run its tool calls, repeat.

Invariant: the only check before a request leaves is the budget's (`budget_problem`):
a request that cannot fit ends the turn instead of being sent; each step is closed in
order when the caller stops early, so its clean-up (a partial reply, "not completed"
results for unanswered calls) is written before the turn ends; the turn ends when the
model answers without tools, a provider error ends it, or the round limit is reached.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
from collections.abc import AsyncGenerator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from ..context.invariant import budget_problem
from ..errors import ContextBudgetExceeded, ProviderError, ZephError
from ..messages import Message, ReplyBuilder, TextDelta, ToolCallPart, Usage
from ..providers.base import ChatRequest
from .events import (
    AgentEvent,
    AgentWarning,
    CompactionFinished,
    ContextPrepared,
    ReplyDelta,
    TurnFailed,
)
from .replies import store_reply

if TYPE_CHECKING:
    from ..context.report import ContextReport
    from ..store import Conversation, ConversationStore
    from ..tools.base import ToolSet
    from .agent import Agent


@dataclass
class TurnState:
    """What one turn carries from step to step."""

    conversation: Conversation
    system: str | None
    stream: bool
    used_ids: set[str]  # tool call ids already in the conversation
    prompt_id: int = 0  # the stored user message this turn answers
    answered: bool = False  # something of a reply (text, tool calls) was stored this turn
    withdrawn: bool = False  # nothing was: the prompt is hidden from later turns (`withdraw_unanswered`)
    total: Usage = field(default_factory=Usage)
    rounds: int = 0  # tool rounds run
    context_retries: int = 0
    changes: list[str] = field(default_factory=list)  # compaction since the last request, for its report
    messages: list[Message] = field(default_factory=list)
    report: ContextReport | None = None
    raw_estimate: int = 0
    dump_id: int | None = None
    max_tokens: int = 0  # the reply limit the latest request carried
    parsed: list[tuple[ToolCallPart, str | None]] = field(default_factory=list)
    retry: bool = False  # send again (after compaction, a learned window or dropping tools)
    ended: bool = False


def call_ids(store: ConversationStore, conversation_id: int) -> set[str]:
    """Call ids a request may carry: those of agent-visible messages (compacted ones are never sent)."""
    return {
        call.id
        for row in store.history(conversation_id, agent_visible=True)
        for call in row.message.tool_calls
    }


async def turn_events(agent: Agent, turn: TurnState) -> AsyncGenerator[AgentEvent, None]:
    """prepare → send → store the reply → run its tool calls, until the model answers without tools."""
    conversation = turn.conversation
    for note in (*agent.turn_memory.notes, *agent._turn_notes):
        yield AgentWarning(note)
    # settled before the tool warnings, which then speak of exact counts where bounds cannot decide
    tools: ToolSet | None = agent._settled_tools(turn)
    for warning in agent._tool_warnings(conversation):
        yield warning
    if problem := agent.global_prompt(conversation).problem:
        yield AgentWarning(problem)
    if "compactor" in agent.__dict__:  # one built by an earlier turn: a new turn for it
        agent.compactor.start_turn()
    while True:
        turn.retry = False
        tools = tools if tools is not None else agent._settled_tools(turn)
        builder = ReplyBuilder()
        # Each step is closed in order when the caller stops early, so its clean-up (a partial reply,
        # "not completed" results for unanswered calls) is written before the turn ends.
        for step in (prepare(agent, turn, tools), send(agent, turn, tools, builder)):
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
        async with contextlib.aclosing(store_reply(agent, turn, builder)) as events:
            async for event in events:
                yield event
        if turn.ended:
            return
        from .tool_rounds import run_calls  # the reply called tools: a plain reply never imports them

        runner = agent._runner(turn.conversation, tools)
        calls = run_calls(
            runner,
            lambda: agent.sandbox.take_notice(),
            lambda result, metadata: agent._save_result(turn.conversation, result, metadata),
            turn.parsed,
        )
        async with contextlib.aclosing(calls) as events:
            async for event in events:
                yield event
        await agent.compactor.after_tool_round(turn.conversation)
        tools = None


def withdraw_unanswered(agent: Agent, turn: TurnState, reason: str) -> bool:
    """A turn ending on an error before anything of a reply was stored: its prompt is withdrawn from what later
    turns send (sending it again, as the user will, would put it in twice); whether it was."""
    if turn.answered or not turn.prompt_id:
        return False
    if turn.withdrawn:
        return True
    try:
        agent.store.withdraw_prompt(turn.prompt_id, reason)
    except ZephError:  # the store failing too: the prompt stays as it was
        return False
    turn.withdrawn = True
    return True


async def prepare(agent: Agent, turn: TurnState, tools: ToolSet) -> AsyncGenerator[AgentEvent, None]:
    """Compaction as the context needs it, then the request's messages and report; ends the turn
    when the request cannot fit the budget (the one check before a request leaves)."""
    conversation = turn.conversation
    turn.messages, turn.report, turn.raw_estimate = agent.context_for(conversation, turn.system, tools)
    compacted = False
    if agent._compaction_may_act(turn.report, agent._provisional_due(conversation)):
        async for event in agent.compactor.before_request(conversation, turn.report):
            compacted = True
            if isinstance(event, CompactionFinished):
                turn.changes.append(event.result.describe())
            yield event
    if compacted:
        turn.messages, turn.report, turn.raw_estimate = agent.context_for(conversation, turn.system, tools)
    if turn.changes:
        turn.report, turn.changes = dataclasses.replace(turn.report, compaction=tuple(turn.changes)), []
    yield ContextPrepared(turn.report)  # its notes (a summary over its share, history not sent) are for
    # `zeph context` and /context: nothing the user could do about them on every turn
    problem = budget_problem(turn.report)
    if problem is not None:
        turn.ended = True
        yield TurnFailed(ContextBudgetExceeded(problem), prompt_withdrawn=withdraw_unanswered(agent, turn, problem))


async def send(agent: Agent, turn: TurnState, tools: ToolSet, builder: ReplyBuilder) -> AsyncGenerator[AgentEvent, None]:
    """Stream one request into `builder`; a provider error ends the turn or asks for a retry."""
    assert agent.profile is not None and turn.report is not None
    dump = agent.dump
    turn.dump_id = dump.request(provider=agent.provider.name, model=agent.model_label, report=turn.report) if dump else None
    request = ChatRequest(
        messages=tuple(turn.messages),
        tools=tools.specs(),
        max_tokens=agent._reply_cap(turn.report),
        temperature=agent.config.llm.temperature,
        stream=turn.stream,
        context_window=turn.report.budget or agent.profile.context_window,
        wire_tap=dump.tap(turn.dump_id) if dump else None,
    )
    turn.max_tokens = request.max_tokens
    try:
        async for event in agent.provider.stream(request):
            builder.add(event)
            if isinstance(event, TextDelta) and event.text:
                yield ReplyDelta(event.text)
    except ProviderError as exc:
        from .provider_errors import on_provider_error  # a turn without errors never imports it

        async for reported in on_provider_error(agent, turn, request, builder, exc):
            yield reported
    except (asyncio.CancelledError, KeyboardInterrupt):
        turn.answered = agent._save_partial(turn.conversation, builder, "interrupted") is not None or turn.answered
        raise
    except GeneratorExit:  # the caller stopped reading mid-reply (its output closed)
        turn.answered = agent._save_partial(turn.conversation, builder, "stopped") is not None or turn.answered
        raise
