"""The chat app's view of one turn (or one manual compaction): agent events into transcript entries.

Invariant: it only renders — reply text into one `AssistantEntry` per reply
block, tool calls into `ToolEntry`s (what a running one reports in its title; a `task` call into a `SubagentEntry` showing the
sub-agent's own transcript), warnings, errors and cut replies into notices under
them, usage and compaction into the status line — and every reply block it
opened is finished when the turn ends, fails or is cancelled.
"""

from __future__ import annotations

from typing import Protocol

from ..event_handler import AgentEventHandler
from ...agent.events import (
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
from ..render import length_cut_notice, progress_text
from .status_bar import StatusBar
from .subagent_view import TASK_TOOL, SubagentEntry
from .transcript import AssistantEntry, Divider, ToolEntry, Transcript


class TurnSurface(Protocol):
    """What a turn draws on: the chat app, seen through the parts it uses (no import of the app)."""

    @property
    def status(self) -> StatusBar: ...

    @property
    def transcript(self) -> Transcript: ...

    def update_header(self) -> None: ...

    async def notice(self, text: str, kind: str = "info") -> None: ...

COMPACTION_BADGES = {
    "soft": "pruning tool outputs…",
    "reactive_retry": "compacting (the request did not fit)…",
}


def failure_text(error: Exception) -> str:
    """A provider error inline, with what to do next."""
    return f"{error}\nyour message is saved; press ↑ to edit it and send it again"


class TurnView(AgentEventHandler):
    """Renders the events of one turn into the app's transcript and status line."""

    def __init__(self, app: TurnSurface, reply_limit: int = 0) -> None:
        self.app = app
        self.reply_limit = reply_limit  # the max_tokens requests carry (for the length-cut notice)
        self.reply: AssistantEntry | None = None  # the reply block being streamed
        self.tools: dict[str, ToolEntry | SubagentEntry] = {}

    async def end_reply_block(self, full_text: str | None = None, *, partial: str = "") -> None:
        if self.reply is not None:
            await self.reply.finish(full_text, partial=partial)
            self.reply = None

    async def cancelled(self) -> None:
        await self.end_reply_block(partial="cancelled")
        for entry in self.tools.values():
            if isinstance(entry, SubagentEntry):
                entry.cancelled()

    # ---- events ----------------------------------------------------------------------

    async def on_turn_queued(self, event: TurnQueued) -> None:
        who = f" ({event.holder})" if event.holder else ""
        self.app.status.show_badge(f"waiting for another zeph's turn on session {event.conversation_id}{who}…")

    async def on_turn_started(self, event: TurnStarted) -> None:
        self.app.status.show_badge("")
        self.app.update_header()

    async def on_context_prepared(self, event: ContextPrepared) -> None:
        self.app.status.show_report(event.report)

    async def on_reply_delta(self, event: ReplyDelta) -> None:
        if self.reply is None:
            self.reply = AssistantEntry()
            await self.app.transcript.add(self.reply)
        await self.reply.append(event.text)
        self.app.status.add_streamed(event.text)

    async def on_tool_call_started(self, event: ToolCallStarted) -> None:
        await self.end_reply_block()
        entry: ToolEntry | SubagentEntry
        if event.call.name == TASK_TOOL:  # a sub-agent's run: a block that expands to its transcript
            entry = SubagentEntry(event.subject, event.call.arguments)
        else:
            entry = ToolEntry(event.call.name, event.subject, event.call.arguments)
        self.tools[event.call.id] = entry
        await self.app.transcript.add(entry)

    async def on_tool_call_finished(self, event: ToolCallFinished) -> None:
        entry = self.tools.get(event.call.id)
        if entry is not None:
            label = event.summary or event.decision
            if event.decision in ("denied", "blocked", "invalid"):
                label = f"{event.decision}: {event.summary}"
            entry.finish(label, event.result.content, failed=event.result.is_error)

    async def on_tool_call_progress(self, event: ToolCallProgress) -> None:
        entry = self.tools.get(event.call_id)
        if isinstance(entry, ToolEntry):
            entry.progressed(progress_text(event))

    async def on_subagent_started(self, event: SubagentStarted) -> None:
        entry = self.tools.get(event.call_id)
        if isinstance(entry, SubagentEntry):
            entry.started(event)

    async def on_subagent_progress(self, event: SubagentProgress) -> None:
        entry = self.tools.get(event.call_id)
        if isinstance(entry, SubagentEntry):
            await entry.show(event.event)

    async def on_subagent_finished(self, event: SubagentFinished) -> None:
        entry = self.tools.get(event.call_id)
        if isinstance(entry, SubagentEntry):
            entry.ended(event)

    async def on_usage_reported(self, event: UsageReported) -> None:
        self.app.status.show_usage(event.usage, event.report.used_tokens)

    async def on_warning(self, event: AgentWarning) -> None:
        await self.app.notice(event.text, "warning")

    async def on_turn_failed(self, event: TurnFailed) -> None:
        await self.end_reply_block(partial=str(event.error))
        await self.app.notice(failure_text(event.error), "error")

    async def on_turn_finished(self, event: TurnFinished) -> None:
        if self.reply is not None:
            await self.end_reply_block(event.text)
        elif event.text:
            await self.app.transcript.add(AssistantEntry(event.text))
        if event.stop_reason == "length":
            await self.app.notice(event.notice or length_cut_notice(self.reply_limit), "warning")

    async def on_compaction_started(self, event: CompactionStarted) -> None:
        if event.kind != "soft":
            await self.end_reply_block()  # a retry after it streams into a reply block of its own
        self.app.status.show_badge(COMPACTION_BADGES.get(event.kind, "compacting…"))

    async def on_compaction_status(self, event: CompactionStatus) -> None:
        self.app.status.show_badge(event.text)

    async def on_compaction_finished(self, event: CompactionFinished) -> None:
        self.app.status.show_badge("")
        result = event.result
        if result.skipped or result.rejected:
            await self.app.notice(result.describe(), "warning" if result.rejected else "info")
        else:
            await self.app.transcript.add(Divider(result.describe()))
