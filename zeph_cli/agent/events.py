"""What the agent tells its callers: the events of one turn, compaction included.

Invariant: plain immutable values with no behaviour; the CLI and the TUI
render them, and nothing in them refers back to the agent.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Union

if TYPE_CHECKING:  # annotations only: a turn that compacts nothing never imports compaction
    from ..context.compaction.result import CompactionResult
    from ..context.report import ContextReport
    from ..errors import ZephError
    from ..messages import ToolCallPart, ToolResultPart, Usage
    from ..store import Conversation


@dataclass(frozen=True)
class TurnStarted:
    conversation: Conversation
    user_message_id: int


@dataclass(frozen=True)
class ContextPrepared:
    report: ContextReport


@dataclass(frozen=True)
class ReplyDelta:
    text: str


@dataclass(frozen=True)
class ToolCallStarted:
    call: ToolCallPart
    kind: str  # read | write | exec ("" for an unknown tool)
    subject: str  # the command or path, for display


@dataclass(frozen=True)
class ToolCallFinished:
    call: ToolCallPart
    result: ToolResultPart
    decision: str
    summary: str
    duration_ms: int | None = None
    exit_code: int | None = None


@dataclass(frozen=True)
class UsageReported:
    usage: Usage
    report: ContextReport


@dataclass(frozen=True)
class AgentWarning:
    text: str


@dataclass(frozen=True)
class TurnFailed:
    error: ZephError
    partial_message_id: int | None = None


@dataclass(frozen=True)
class TurnFinished:
    message_id: int | None
    text: str
    usage: Usage
    stop_reason: str


@dataclass(frozen=True)
class CompactionStarted:
    kind: str  # soft | hard | proactive | reactive_retry | manual | autonomous


@dataclass(frozen=True)
class CompactionStatus:
    text: str  # e.g. "Validating compaction quality…"


@dataclass(frozen=True)
class CompactionFinished:
    result: CompactionResult


AgentEvent = Union[
    TurnStarted,
    ContextPrepared,
    ReplyDelta,
    ToolCallStarted,
    ToolCallFinished,
    UsageReported,
    AgentWarning,
    TurnFailed,
    TurnFinished,
    CompactionStarted,
    CompactionStatus,
    CompactionFinished,
]
