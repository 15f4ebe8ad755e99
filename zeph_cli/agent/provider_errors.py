"""What a provider error does to a turn: drop tools, learn the window and compact, or end the turn.

Invariant: a model that cannot take tools is asked again without them (said once); a
context-length error teaches the window it states (remembered per provider, model and
endpoint, never above a window the server stated) and is retried after compaction at
most `CONTEXT_LENGTH_RETRIES` times, and only while nothing of the reply has arrived;
any other error ends the turn, keeping the partial text that arrived, with one message
saying what to do.
"""

from __future__ import annotations

import re
from collections.abc import AsyncIterator
from typing import TYPE_CHECKING

from ..errors import ContextLengthExceeded, ProviderError, context_limit_from_message, is_context_length_message
from ..models import ModelProfile, with_window
from .said_once import first_time
from .side_jobs import record_response
from ..store.windows import remember_window
from .events import AgentEvent, AgentWarning, CompactionFinished, TurnFailed
from .replies import save_partial
from .turn import withdraw_unanswered

if TYPE_CHECKING:
    from ..messages import ReplyBuilder
    from ..providers.base import ChatRequest, Provider
    from ..store.sqlite import Database
    from .turn import TurnDeps, TurnState

# What servers say when a model cannot take tools (Ollama, llama.cpp, vLLM...).
_NO_TOOL_SUPPORT = re.compile(
    r"does not support tools|tools? (?:are|is) not supported|not support(?:ed)? (?:tool|function)|"
    r"requires --jinja|tool choice requires|function calling is not",
    re.IGNORECASE,
)
# Spec ("Reactive Retry on Context Length Errors"): compact and retry, "max_attempts (default: 2)".
CONTEXT_LENGTH_RETRIES = 2


async def on_provider_error(
    deps: TurnDeps, turn: TurnState, request: ChatRequest, builder: ReplyBuilder, exc: ProviderError
) -> AsyncIterator[AgentEvent]:
    """A model without tools: again without them. Too long: learn the window, compact, again (twice at
    most). Anything else ends the turn, keeping what arrived."""
    nothing_yet = not builder.content and not builder.calls
    if request.tools and nothing_yet and _NO_TOOL_SUPPORT.search(str(exc)):
        reason = f"{deps.provider.name} model {deps.model_label} does not support tools"
        deps.tools.go_without(reason)
        turn.retry = True
        if first_time(f"running without tools: {reason}"):
            yield AgentWarning(f"running without tools: {reason}")
        return
    record_response(deps.dump, turn.dump_id, builder, str(exc))
    too_long = isinstance(exc, ContextLengthExceeded) or is_context_length_message(str(exc))
    if too_long and nothing_yet and turn.context_retries < CONTEXT_LENGTH_RETRIES:
        turn.context_retries += 1
        learned = learn_window(deps, exc)
        if learned:  # the next request is budgeted for the real window: trimmed and compacted to fit it
            yield AgentWarning(learned)
            turn.retry = True
            return
        freed = False
        async for event in deps.compactor().compact(turn.conversation, "reactive_retry"):
            if isinstance(event, CompactionFinished):
                turn.changes.append(event.result.describe())
                freed = freed or event.result.tokens_saved > 0
            yield event
        if freed:
            turn.retry = True
            return
    elif too_long:
        learned = learn_window(deps, exc)
        if learned:
            yield AgentWarning(learned)
    if too_long and nothing_yet:
        attempts = turn.context_retries
        exc = ContextLengthExceeded(
            f"{exc} — the request still does not fit after compacting "
            f"({attempts} attempt{'s' * (attempts != 1)}); start a new session "
            "or lower [memory] context_budget_tokens to the model's real window",
            provider=exc.provider,
            status=exc.status,
        )
    partial_id = save_partial(deps.store, deps.counter(), deps.model_label, turn.conversation.id, builder, str(exc))
    turn.answered = turn.answered or partial_id is not None
    turn.ended = True
    yield TurnFailed(exc, partial_id, withdraw_unanswered(deps.store, turn, str(exc)))


def learn_window(deps: TurnDeps, exc: ProviderError) -> str | None:
    """The session's profile takes the window `exc` states, if it teaches one; what to tell the user, or None."""
    profile = deps.profile()
    assert profile is not None
    learned = learned_window(exc, profile, deps.provider, deps.store.db)
    if learned is None:
        return None
    profile, message = learned
    deps.set_profile(profile)
    return message


def learned_window(
    exc: ProviderError, profile: ModelProfile, provider: Provider, db: Database
) -> tuple[ModelProfile, str] | None:
    """Remember the window a context-length error states (per provider, model and endpoint), so this
    and every later request is budgeted for it: the profile with that window and what to tell the user,
    or None when nothing was learned."""
    limit = getattr(exc, "limit", None) or context_limit_from_message(str(exc))
    if not limit or limit == profile.context_window:
        return None
    if limit > profile.context_window and not profile.window_is_guess:
        return None  # the server or an earlier error stated a smaller window: keep it
    source = "learned: the server's context-length error"
    provider.forget_facts()  # what it said before (kept a few minutes) is stale
    remember_window(db, provider.name, provider.model, provider.endpoint, limit, source)
    previous = profile.context_window
    return with_window(profile, limit, source), (
        f"{provider.name} says the model's window is {limit:,} tokens (zeph assumed {previous:,}): "
        "remembered, and every request is budgeted for it from now on"
    )
