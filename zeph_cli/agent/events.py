"""What the agent tells its callers: the events of one turn, compaction included.

Invariant: plain immutable values with no behaviour; the CLI and the TUI
render them, and nothing in them refers back to the agent.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Union

from ..tools.reports import AgentWarning, ToolCallProgress  # what a running tool may report, too

if TYPE_CHECKING:  # annotations only: a turn that compacts nothing never imports compaction
    from ..context.compaction.result import CompactionResult
    from ..context.report import ContextReport
    from ..errors import ZephError
    from ..messages import ToolCallPart, ToolResultPart, Usage
    from ..store import Conversation


@dataclass(frozen=True)
class TurnQueued:
    """Another turn runs on this session (another zeph, perhaps): this one waits for it, its prompt not
    stored yet."""

    conversation_id: int
    holder: str = ""  # who holds the session's turn (`pid 1234, zeph ask, since 09:41:05`), when it said


@dataclass(frozen=True)
class TurnStarted:
    """The user's message is stored (its id); the turn has begun."""

    conversation: Conversation
    user_message_id: int


@dataclass(frozen=True)
class ContextPrepared:
    """What the next request will hold, block by block, within the budget."""

    report: ContextReport


@dataclass(frozen=True)
class ReplyDelta:
    """A piece of the reply's text, as it streams."""

    text: str


@dataclass(frozen=True)
class ToolCallStarted:
    """The model called a tool; it runs (or asks for approval) now."""

    call: ToolCallPart
    kind: str  # read | write | exec ("" for an unknown tool)
    subject: str  # the command or path, for display


@dataclass(frozen=True)
class ToolCallFinished:
    """A tool call's stored result, the approval decision and a one-line summary."""

    call: ToolCallPart
    result: ToolResultPart
    decision: str
    summary: str
    duration_ms: int | None = None
    exit_code: int | None = None


@dataclass(frozen=True)
class UsageReported:
    """The provider's token usage for a request, beside the context it measured."""

    usage: Usage
    report: ContextReport


@dataclass(frozen=True)
class TurnFailed:
    """The turn ended on an error; a partial reply, if any, is stored under `partial_message_id`; a prompt that
    got no reply at all is withdrawn from what later turns send (`prompt_withdrawn`)."""

    error: ZephError
    partial_message_id: int | None = None
    prompt_withdrawn: bool = False  # nothing answered the prompt: later turns do not send it (the user still sees it)


@dataclass(frozen=True)
class TurnFinished:
    """The reply is complete and stored (`message_id`), with its usage and why it stopped."""

    message_id: int | None
    text: str
    usage: Usage
    stop_reason: str
    notice: str = ""  # a reply stopped for length: why, and which setting would let it go on


@dataclass(frozen=True)
class CompactionStarted:
    """Compaction of the history has begun, of this kind."""

    kind: str  # soft | hard | proactive | reactive_retry | manual | autonomous


@dataclass(frozen=True)
class CompactionStatus:
    """Progress of a compaction, for a status line."""

    text: str  # e.g. "Validating compaction quality…"


@dataclass(frozen=True)
class CompactionFinished:
    """What a compaction changed."""

    result: CompactionResult


@dataclass(frozen=True)
class SubagentStarted:
    """A `task` call started a sub-agent in its own session (`conversation_id`)."""

    call_id: str  # the parent's task call
    description: str
    conversation_id: int
    mode: str


@dataclass(frozen=True)
class SubagentProgress:
    """One event of a running sub-agent's turn (its replies, tool calls, usage), as it happens."""

    call_id: str
    event: AgentEvent


@dataclass(frozen=True)
class SubagentFinished:
    """A sub-agent ended: how (`done`, `max_turns`, `failed`, `cancelled`) and the tokens it spent."""

    call_id: str
    conversation_id: int
    outcome: str
    usage: Usage
    rounds: int = 0  # tool rounds it ran


AgentEvent = Union[
    TurnQueued,
    TurnStarted,
    ContextPrepared,
    ReplyDelta,
    ToolCallStarted,
    ToolCallFinished,
    ToolCallProgress,
    UsageReported,
    AgentWarning,
    TurnFailed,
    TurnFinished,
    CompactionStarted,
    CompactionStatus,
    CompactionFinished,
    SubagentStarted,
    SubagentProgress,
    SubagentFinished,
]
