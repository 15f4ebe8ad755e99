"""One consumer of `AgentEvent`s for every front end: a handler with one method per event kind.

Invariant: `dispatch()` is the only place an event is matched to what it is;
the CLI's output of `zeph ask` and the chat app subclass `AgentEventHandler`
and override what they show, and every method they leave alone does nothing.
"""

from __future__ import annotations

from ..agent.events import (
    AgentEvent,
    AgentWarning,
    CompactionFinished,
    CompactionStarted,
    CompactionStatus,
    ContextPrepared,
    ReplyDelta,
    SubagentFinished,
    SubagentProgress,
    SubagentStarted,
    ToolCallFinished,
    ToolCallProgress,
    ToolCallStarted,
    TurnFailed,
    TurnFinished,
    TurnQueued,
    TurnStarted,
    UsageReported,
)


class AgentEventHandler:
    """Override the events to show; each is awaited in the order the agent yields them."""

    async def on_turn_queued(self, event: TurnQueued) -> None: ...

    async def on_turn_started(self, event: TurnStarted) -> None: ...

    async def on_context_prepared(self, event: ContextPrepared) -> None: ...

    async def on_reply_delta(self, event: ReplyDelta) -> None: ...

    async def on_tool_call_started(self, event: ToolCallStarted) -> None: ...

    async def on_tool_call_finished(self, event: ToolCallFinished) -> None: ...

    async def on_tool_call_progress(self, event: ToolCallProgress) -> None: ...

    async def on_usage_reported(self, event: UsageReported) -> None: ...

    async def on_warning(self, event: AgentWarning) -> None: ...

    async def on_turn_failed(self, event: TurnFailed) -> None: ...

    async def on_turn_finished(self, event: TurnFinished) -> None: ...

    async def on_compaction_started(self, event: CompactionStarted) -> None: ...

    async def on_compaction_status(self, event: CompactionStatus) -> None: ...

    async def on_compaction_finished(self, event: CompactionFinished) -> None: ...

    async def on_subagent_started(self, event: SubagentStarted) -> None: ...

    async def on_subagent_progress(self, event: SubagentProgress) -> None: ...

    async def on_subagent_finished(self, event: SubagentFinished) -> None: ...


_METHODS: dict[type, str] = {
    TurnQueued: "on_turn_queued",
    TurnStarted: "on_turn_started",
    ContextPrepared: "on_context_prepared",
    ReplyDelta: "on_reply_delta",
    ToolCallStarted: "on_tool_call_started",
    ToolCallFinished: "on_tool_call_finished",
    ToolCallProgress: "on_tool_call_progress",
    UsageReported: "on_usage_reported",
    AgentWarning: "on_warning",
    TurnFailed: "on_turn_failed",
    TurnFinished: "on_turn_finished",
    CompactionStarted: "on_compaction_started",
    CompactionStatus: "on_compaction_status",
    CompactionFinished: "on_compaction_finished",
    SubagentStarted: "on_subagent_started",
    SubagentProgress: "on_subagent_progress",
    SubagentFinished: "on_subagent_finished",
}


async def dispatch(event: AgentEvent, handler: AgentEventHandler) -> None:
    """Call the handler's method for the event's kind (an event of an unknown kind is a bug)."""
    method = _METHODS.get(type(event))
    if method is None:
        raise TypeError(f"not an agent event: {type(event).__name__}")
    await getattr(handler, method)(event)
