"""The turn loop and its helpers: the agent, its events, compaction, tool calls, the chat session.

Names are imported from their submodule on first use, so importing the events
(as the printers do) imports neither the turn loop nor compaction.
"""

from __future__ import annotations

from ..lazy_names import lazy_names

_EVENTS = (
    "AgentEvent",
    "AgentWarning",
    "CompactionFinished",
    "CompactionStarted",
    "CompactionStatus",
    "ContextPrepared",
    "ReplyDelta",
    "ToolCallFinished",
    "ToolCallStarted",
    "TurnFailed",
    "TurnFinished",
    "TurnStarted",
    "UsageReported",
)

_HOME = {
    "Agent": "agent",
    "AgentServices": "agent",
    "ENHANCE_KEY": "agent",
    "Workspace": "agent",
    **dict.fromkeys(_EVENTS, "events"),
}

__all__ = list(_HOME)


__getattr__, __dir__ = lazy_names(__name__, _HOME)
