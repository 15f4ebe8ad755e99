"""Storing the model's reply: the message, its usage, the calibration it teaches, and the turn's end.

Invariant: every reply is stored when it completes, with its usage, stop reason and
model; a reply cut short keeps its partial text, marked `partial`; the calls a reply
makes are stored with unique ids (and their secrets redacted) before any of them
runs; calibration learns only from a server-reported prompt size compared with an
exact estimate; the reply cap keeps prompt and reply within the budget.
"""

from __future__ import annotations

import dataclasses
from collections.abc import AsyncIterator
from typing import TYPE_CHECKING

from ..errors import ReplyNotStored, StoreError
from ..log import get_logger
from ..messages import Message, ReplyBuilder, TextPart, Usage, normalize_stop_reason
from ..models import ModelProfile, reply_token_cap
from ..side_jobs import record_response
from ..tokens import TokenCounter, bounded, count_message
from .events import AgentEvent, AgentWarning, TurnFinished, UsageReported

if TYPE_CHECKING:
    from ..context.report import ContextReport
    from ..providers.base import Provider
    from ..store import ConversationStore
    from .agent import Agent
    from .turn_loop import TurnState

log = get_logger("replies")

REPLY_MARGIN_TOKENS, REPLY_MARGIN_SHARE = 32, 0.03  # kept free of prompt and reply, for server-side additions


async def store_reply(agent: Agent, turn: TurnState, builder: ReplyBuilder) -> AsyncIterator[AgentEvent]:
    """Store the reply and its usage; end the turn when it calls no tools or the round limit is reached."""
    conversation = turn.conversation
    parsed = builder.parsed_tool_calls()
    if parsed:  # a reply without tool calls never imports the tool-call modules
        from .tool_rounds import as_stored, unique_id
    turn.parsed = [(unique_id(call, turn.used_ids), problem) for call, problem in parsed]
    calls = [call for call, _ in turn.parsed]
    usage = builder.usage
    if usage.prompt_tokens <= 0 and bounded(agent.counter):
        # The server reported no usage: the request's own count stands in for it, so count it exactly
        # (before the reply is stored: the same request, which bounds and exact counts build alike).
        agent.counter.make_exact()
        exact = agent.context_for(conversation, turn.system, agent.offered_tools())[1]
        turn.report = dataclasses.replace(exact, compaction=turn.report.compaction if turn.report else ())
    turn.total = turn.total + usage
    stop_reason = normalize_stop_reason(builder.stop_reason)
    stored_calls = [as_stored(call) for call in calls]  # the calls run with the real arguments
    reply_parts: list = ([TextPart(builder.content)] if builder.content else []) + stored_calls
    message_id = None
    if reply_parts:
        reply = Message("assistant", tuple(reply_parts))
        try:
            message_id = agent.store.add_message(
                conversation.id,
                reply,
                token_count=count_message(agent.counter, reply),
                token_counter=agent.counter.name,
                metadata={"usage": usage.to_dict(), "stop_reason": stop_reason, "model": agent.model_label},
            ).id
        except StoreError as exc:  # shown but not kept: the caller keeps its text somewhere else
            raise ReplyNotStored(f"the reply could not be stored: {exc}", builder.content) from None
        if agent.learns_guidelines:
            agent.guidelines.after_reply(conversation, builder.content)
    elif not calls:
        yield AgentWarning("the model returned an empty reply")
    calibrate(agent.store, agent.provider, agent.counter, turn.raw_estimate, usage)
    record_response(agent.dump, turn.dump_id, builder)
    assert turn.report is not None
    yield UsageReported(usage, turn.report)
    warning = agent._dump_warning()
    if warning:
        yield warning

    if not calls:
        turn.ended = True
        agent.session_memory.after_reply(conversation, isolated=agent.turn_worldbook.isolated)  # in the background: the reply is stored already
        yield TurnFinished(message_id, builder.content, turn.total, stop_reason)
        return
    max_rounds = agent.config.agent.max_tool_iterations
    if turn.rounds >= max_rounds:
        from .tool_rounds import interrupted

        for call in calls:
            agent._save_result(
                conversation,
                interrupted(call, f"this turn reached its limit of {max_rounds} tool rounds"),
                {"decision": "limit"},
            )
        yield AgentWarning(
            f"stopped after {max_rounds} tool rounds (agent.max_tool_iterations); "
            "the model wanted more: reply \"continue\" to let it go on, or raise the limit"
        )
        turn.ended = True
        yield TurnFinished(message_id, builder.content, turn.total, "max_tool_iterations")
        return
    turn.rounds += 1


def save_partial(
    store: ConversationStore, counter: TokenCounter, model: str, conversation_id: int, builder: ReplyBuilder, reason: str
) -> int | None:
    """Store the text that arrived before a reply was cut short, marked `partial` with the reason; its id."""
    if not builder.content:
        return None
    reply = Message.assistant(builder.content)
    stored = store.add_message(
        conversation_id,
        reply,
        token_count=count_message(counter, reply),
        token_counter=counter.name,
        metadata={"partial": True, "error": reason, "model": model},
    )
    return stored.id


def calibrate(store: ConversationStore, provider: Provider, counter: TokenCounter, raw_estimate: int, usage: Usage) -> None:
    """Teach the calibration the server's prompt size against the raw estimate, when both are real."""
    if usage.prompt_tokens <= 0 or bounded(counter):
        return  # nothing reported, or the estimate was a bound: nothing to learn from
    current = store.calibration(provider.name, provider.model)
    updated = current.observe(raw_estimate, usage.prompt_tokens)
    if updated is not current:
        try:
            store.save_calibration(provider.name, provider.model, updated)
        except StoreError as exc:  # a later reply teaches it again
            log.warning("the token calibration could not be saved: %s", exc)


def reply_cap(max_tokens: int, profile: ModelProfile, report: ContextReport) -> int:
    """`max_tokens` for a request: the configured cap, within what the budget leaves after the prompt."""
    cap = reply_token_cap(max_tokens, profile)
    if report.budget:  # prompt + reply within the budget, with a margin for what servers add (templates)
        margin = max(REPLY_MARGIN_TOKENS, int(report.budget * REPLY_MARGIN_SHARE))
        cap = min(cap, max(report.budget - report.used_tokens - margin, 1))
    return cap
