"""Storing the model's reply: the message, its usage, the calibration it teaches, and the turn's end.

Invariant: every reply is stored when it completes, with its usage, stop reason and
model; a reply cut short keeps its partial text, marked `partial`; the calls a reply
makes are stored with unique ids (and their secrets redacted) before any of them
runs; calibration learns only from a server-reported prompt size compared with an
exact estimate; the reply cap keeps prompt and reply within the budget.
"""

from __future__ import annotations

import dataclasses
from collections.abc import AsyncGenerator
from dataclasses import dataclass
from typing import TYPE_CHECKING

from ..context.budget import server_room
from ..context.tool_fit import server_left_out_tools, tools_left_out_notice
from ..errors import ReplyNotStored, StoreError
from ..log import get_logger
from ..messages import Message, ReplyBuilder, TextPart, Usage, normalize_stop_reason
from ..models import ModelProfile, reply_token_cap
from .said_once import first_time
from .side_jobs import record_response
from ..tokens import TokenCounter, bounded, count_message
from .events import AgentEvent, AgentWarning, TurnFinished, UsageReported

if TYPE_CHECKING:
    from ..context.report import ContextReport
    from ..providers.base import Provider
    from ..store import ConversationStore
    from .turn import TurnDeps, TurnState

log = get_logger("replies")

REPLY_MARGIN_TOKENS, REPLY_MARGIN_SHARE = 32, 0.03  # kept free of prompt and reply, for server-side additions


async def store_reply(deps: TurnDeps, turn: TurnState, builder: ReplyBuilder) -> AsyncGenerator[AgentEvent, None]:
    """Store the reply and its usage; end the turn when it calls no tools or the round limit is reached."""
    conversation = turn.conversation
    parsed = builder.parsed_tool_calls()
    turn.parsed = []
    if parsed:  # a reply without tool calls never imports the tool-call modules
        from .tool_rounds import unique_id

        turn.parsed = [(unique_id(call, turn.used_ids), problem) for call, problem in parsed]
    calls = [call for call, _ in turn.parsed]
    usage = builder.usage
    counter = deps.counter() if usage.prompt_tokens <= 0 else None  # built only when needed (it may load a tokenizer)
    if counter is not None and bounded(counter):
        # The server reported no usage: the request's own count stands in for it, so count it exactly
        # (before the reply is stored: the same request, which bounds and exact counts build alike).
        counter.make_exact()
        exact = deps.context_for(conversation, turn.system, deps.tools.offered())[1]
        turn.report = dataclasses.replace(exact, compaction=turn.report.compaction if turn.report else ())
    left_out = dropped_tools(deps, turn, usage) if not calls else None  # counted before the reply is stored
    turn.total = turn.total + usage
    stop_reason = normalize_stop_reason(builder.stop_reason)
    notice = length_stop_notice(length_stop(deps, turn, builder)) if stop_reason == "length" else ""
    stored_calls = []
    if calls:
        from .tool_rounds import as_stored

        stored_calls = [as_stored(call) for call in calls]  # the calls run with the real arguments
    reply_parts: list = ([TextPart(builder.content)] if builder.content else []) + stored_calls
    message_id = None
    echo = echoed(turn, builder.content)
    if echo:
        log.info("the reply brings back %s: kept out of recall", ", ".join(echo))
    if reply_parts:
        reply = Message("assistant", tuple(reply_parts))
        counter = deps.counter()
        try:
            message_id = deps.store.add_message(
                conversation.id,
                reply,
                token_count=count_message(counter, reply),
                token_counter=counter.name,
                metadata={"usage": usage.to_dict(), "stop_reason": stop_reason, "model": deps.model_label,
                          **({"notice": notice} if notice else {}), **({"echo": list(echo)} if echo else {})},
            ).id
        except StoreError as exc:  # shown but not kept: the caller keeps its text somewhere else
            record_response(deps.dump, turn.dump_id, builder)
            raise ReplyNotStored(f"the reply could not be stored: {exc}", builder.content) from None
        turn.answered = True
        if deps.learn_from_reply is not None:
            deps.learn_from_reply(conversation, builder.content)
    elif not calls:
        yield AgentWarning("the model returned an empty reply")
    if left_out:
        yield AgentWarning(left_out)
    calibrate(deps.store, deps.provider, deps.counter(), turn.raw_estimate, usage)
    record_response(deps.dump, turn.dump_id, builder)
    assert turn.report is not None
    yield UsageReported(usage, turn.report)
    warning = deps.dump_warning()
    if warning:
        yield warning

    if not calls:
        turn.ended = True
        deps.after_turn(conversation, turn.isolated)  # in the background: the reply is stored already
        yield TurnFinished(message_id, builder.content, turn.total, stop_reason, notice)
        return
    max_rounds = deps.max_tool_rounds
    if turn.rounds >= max_rounds:
        from .tool_rounds import interrupted, save_result

        for call in calls:
            save_result(
                deps.store,
                deps.counter(),
                conversation.id,
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


# Bytes per token: a report below the request's bytes over the first left some of it uncounted; one below the
# bytes without the tool schemas over the second is no real tokenizer's count of anything zeph sent.
SUSPECT_BYTES_PER_TOKEN, MOST_BYTES_PER_TOKEN = 5, 10


def echoed(turn: TurnState, text: str) -> tuple[str, ...]:
    """The injected blocks of the turn's last request (recall, memories, profile, session summaries) that
    the reply repeats verbatim, and RECALL_FORMAT when it is written as recall entries: such a reply is
    marked and never recalled."""
    if not text:
        return ()
    from ..context.echo import ECHO_BLOCKS, echoes

    blocks: dict[str, str] = {}
    if turn.report is not None and len(turn.report.sent_blocks) == len(turn.messages):
        for name, message in zip(turn.report.sent_blocks, turn.messages):
            if name in ECHO_BLOCKS:
                blocks[name] = f"{blocks.get(name, '')}\n{message.content}"
    return echoes(text, blocks)


def dropped_tools(deps: TurnDeps, turn: TurnState, usage: Usage) -> str | None:
    """When the server's usage says it left the request's tool schemas out: no tools from now on, and what to
    say about it (once per data dir); None otherwise."""
    report = turn.report
    assert report is not None
    if deps.tools.unavailable or report.block("tools") is None or usage.prompt_tokens <= 0:
        return None
    if deps.provider.settings.kind != "compatible" or usage.cache_read_tokens or usage.cache_write_tokens:
        return None  # hosted APIs and Ollama take tools or refuse them; cached tokens may be left out of a count
    counter = deps.counter()
    if bounded(counter):  # counts are bytes for now: exact ones only when the server's count is suspect
        rest_bytes = report.used_tokens - report.block("tools").tokens  # type: ignore[union-attr]
        if usage.prompt_tokens * SUSPECT_BYTES_PER_TOKEN >= report.used_tokens:
            return None  # no tokenizer packs the whole request into fewer tokens: it was all seen
        if usage.prompt_tokens * MOST_BYTES_PER_TOKEN < rest_bytes:
            return None  # fewer than even the request without its tools would take: a figure that tells nothing
        counter.make_exact()
        report = deps.context_for(turn.conversation, turn.system, deps.tools.offered())[1]
    tools = report.block("tools")
    if tools is None or not server_left_out_tools(report.used_tokens, tools.tokens, usage.prompt_tokens):
        return None
    provider = deps.provider
    notice = tools_left_out_notice(provider.name, provider.endpoint, report.used_tokens, tools.tokens,
                                   usage.prompt_tokens)
    deps.tools.go_without(notice)
    said = first_time(f"the server left the tool schemas out: {provider.name} {provider.endpoint} {deps.model_label}")
    return f"running without tools: {notice}" if said else None


def length_stop(deps: TurnDeps, turn: TurnState, builder: ReplyBuilder) -> LengthStop:
    """The facts of this turn's length-stopped reply: the provider's usage where it reported it, else counts."""
    profile = deps.profile()
    assert profile is not None and turn.report is not None
    usage = builder.usage
    reply = usage.output_tokens if usage.output_tokens > 0 else deps.counter().count(builder.content)
    prompt = usage.prompt_tokens if usage.prompt_tokens > 0 else turn.report.used_tokens
    max_tokens = deps.llm.max_tokens
    return LengthStop(
        sent_cap=turn.max_tokens or reply_token_cap(max_tokens, profile),
        configured_cap=reply_token_cap(max_tokens, profile),
        reply_tokens=reply, prompt_tokens=prompt, budget=turn.report.budget,
        window=profile.context_window, window_from_model=not profile.window_is_guess,
        reported=usage.output_tokens > 0 and usage.prompt_tokens > 0, max_tokens_setting=max_tokens,
        kind=deps.provider.settings.kind,
    )


# A length stop this far below the request's max_tokens was the server's window, not the cap: with the
# provider's own count; with zeph's count of the text (another tokenizer), only when far below.
SHORT_OF_CAP, SHORT_OF_CAP_COUNTED = 0.9, 0.6


@dataclass(frozen=True)
class LengthStop:
    """What is known of a reply the provider stopped for length (`finish_reason: length`)."""

    sent_cap: int  # the max_tokens the request carried
    configured_cap: int  # what llm.max_tokens (or the model's limit) allows a reply
    reply_tokens: int  # reported, else counted from the text
    prompt_tokens: int  # reported, else the request's own count
    budget: int  # the context budget the request was fitted to (0 = none)
    window: int  # the model's window as zeph knows it
    window_from_model: bool  # the window is the server's or model's own, not a table guess
    reported: bool = False  # the provider reported the usage (else the figures are zeph's counts)
    max_tokens_setting: int = 0  # llm.max_tokens (0: the model's output limit decides)
    kind: str = ""  # the provider's kind: where its window is set (`budget.server_room`)

    @property
    def server_cut_it(self) -> bool:
        """The reply ended well before its cap: the server's context window filled, not max_tokens."""
        return self.reply_tokens < self.sent_cap * (SHORT_OF_CAP if self.reported else SHORT_OF_CAP_COUNTED)

    @property
    def squeezed(self) -> bool:
        """The cap itself was cut down to what the budget left after the prompt."""
        return self.sent_cap < self.configured_cap


def length_stop_notice(stop: LengthStop) -> str:
    """What to say under a reply stopped for length, naming the setting that would have let it go on."""
    if stop.server_cut_it:
        filled = f" ({stop.prompt_tokens + stop.reply_tokens:,} tokens with the prompt, as it reported)" if stop.reported else ""
        return (
            f"the server stopped the reply after about {stop.reply_tokens:,} tokens, short of its "
            f"{stop.sent_cap:,}-token limit: its context window filled up{filled}. For longer replies, "
            f"{server_room(stop.kind, stop.budget, stop.window)}, or compact the session (zeph compact, /compact)"
        )
    if not stop.squeezed:
        if not stop.max_tokens_setting and stop.window_from_model and stop.sent_cap >= stop.window // 2:
            return (f"the reply stopped at {stop.sent_cap:,} tokens, half of the model's {stop.window:,}-token "
                    f"window, the most zeph asks for: for longer replies, {server_room(stop.kind, 0, stop.window)}")
        return f"the reply stopped at its length limit of {stop.sent_cap:,} tokens: raise llm.max_tokens for longer replies"
    room = (f"all that the {stop.budget:,}-token context budget left after the {stop.prompt_tokens:,}-token prompt"
            if stop.budget else "all the room left after the prompt")
    if stop.budget and stop.budget < stop.window and stop.window_from_model:
        larger = f"or raise [memory] context_budget_tokens (the model's window is {stop.window:,})"
    elif stop.budget and stop.budget < stop.window:
        larger = "or, if the model's server has a larger context, raise [memory] context_budget_tokens to it"
    elif stop.window_from_model:
        larger = f"or {server_room(stop.kind, stop.budget, stop.window)}"
    else:
        larger = "or use a model with a larger window"
    return (f"the reply stopped at {stop.sent_cap:,} tokens, {room}: compact the session (zeph compact, /compact) "
            f"or start a new one for longer replies, {larger}")


def reply_cap(max_tokens: int, profile: ModelProfile, report: ContextReport) -> int:
    """`max_tokens` for a request: the configured cap, within what the budget leaves after the prompt."""
    cap = reply_token_cap(max_tokens, profile)
    if report.budget:  # prompt + reply within the budget, with a margin for what servers add (templates)
        margin = max(REPLY_MARGIN_TOKENS, int(report.budget * REPLY_MARGIN_SHARE))
        cap = min(cap, max(report.budget - report.used_tokens - margin, 1))
    return cap
