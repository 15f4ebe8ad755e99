"""The chat app's block for one sub-agent run (a `task` call): collapsed to a title line, expanded to the
sub-agent's own transcript as it streams.

Invariant: it only renders the events it is given — the task call's start and result, and the
sub-agent's events (`SubagentStarted`, `SubagentProgress`, `SubagentFinished`) — never the store; the
title always says the job, its state and the tokens the sub-agent spent so far; a sub-agent's own
sub-agents nest as blocks of the same kind.
"""

from __future__ import annotations

from typing import Any

from textual.containers import Vertical
from textual.widgets import Collapsible, Static

from ...agent.events import (
    AgentWarning,
    ReplyDelta,
    SubagentFinished,
    SubagentProgress,
    SubagentStarted,
    ToolCallFinished,
    ToolCallProgress,
    ToolCallStarted,
    TurnFailed,
    TurnFinished,
    UsageReported,
)
from ...messages import Usage
from ..render import progress_text
from .transcript import Notice, ToolEntry, clip_output, literal

TASK_TOOL = "task"  # the tool whose calls get this block (tools/specs.py)
OUTCOMES = {"done": "done", "max_turns": "stopped at max_turns", "failed": "failed", "cancelled": "cancelled"}


class SubagentEntry(Collapsible):
    """A sub-agent's run: the job, then what the sub-agent does (replies, tool calls), then its result."""

    DEFAULT_CSS = """
    SubagentEntry { margin: 1 0 0 0; padding: 0; border: none; background: $boost; }
    SubagentEntry.failed CollapsibleTitle { color: $error; }
    SubagentEntry .job { color: $text-muted; }
    SubagentEntry .reply { margin: 1 0 0 0; }
    SubagentEntry .output { margin: 1 0 0 0; }
    """

    def __init__(self, subject: str, arguments: dict[str, Any], *, status: str = "waiting…", output: str = "",
                 usage: Usage | None = None, session_id: int | None = None, failed: bool = False) -> None:
        self.tool_name = TASK_TOOL
        self.subject = " ".join(subject.split())[:100] or "sub-agent"
        self.arguments = arguments
        self.status = status
        self.output = output
        self.usage = usage or Usage()
        self.session_id = session_id
        self.activity = Vertical(classes="log")  # the sub-agent's transcript, as it streams
        self.tools: dict[str, ToolEntry | SubagentEntry] = {}
        self.reply: Static | None = None  # the reply block being streamed
        self.reply_text = ""
        super().__init__(
            Static(literal(str(arguments.get("prompt", ""))), classes="job"),
            self.activity,
            Static(literal(clip_output(output)), classes="output"),
            title=self._title_text(),
            collapsed=True,
            classes="failed" if failed else "",
        )

    def _title_text(self) -> str:
        tokens = f" · {self.usage.prompt_tokens:,} in · {self.usage.output_tokens:,} out" if self.usage.prompt_tokens else ""
        session = f" · session {self.session_id}" if self.session_id is not None else ""
        return literal(f"⧉ {self.subject} · {self.status}{tokens}{session}")  # the model's words, never markup

    def _retitle(self) -> None:
        self.title = self._title_text()

    # ---- the parent's events about it ---------------------------------------------------

    def started(self, event: SubagentStarted) -> None:
        self.session_id = event.conversation_id
        self.status = "running…" if event.mode == "agent" else f"running ({event.mode} mode)…"
        self._retitle()

    def ended(self, event: SubagentFinished) -> None:
        self.usage = event.usage
        self.status = OUTCOMES.get(event.outcome, event.outcome)
        self._retitle()

    @property
    def running(self) -> bool:
        return self.status in ("waiting…", "running…") or self.status.startswith("running (")

    def cancelled(self) -> None:
        """The turn was cancelled: a sub-agent still running stopped with it."""
        if self.running:
            self.status = "cancelled"
            self._retitle()

    def finish(self, status: str, output: str, *, failed: bool = False) -> None:
        """The task call's result (what the parent got back)."""
        if failed or self.running:
            self.status = status or "done"
        self.output = output
        self._retitle()
        self.query_one(".output", Static).update(literal(clip_output(output)))
        self.set_class(failed, "failed")

    # ---- the sub-agent's own events -----------------------------------------------------

    async def show(self, event: object) -> None:
        """One event of the sub-agent's turn, rendered into its transcript."""
        if isinstance(event, ReplyDelta):
            if self.reply is None:
                self.reply, self.reply_text = Static("", classes="reply"), ""
                await self.activity.mount(self.reply)
            self.reply_text += event.text
            self.reply.update(literal(self.reply_text))
        elif isinstance(event, ToolCallStarted):
            self.reply = None
            entry: ToolEntry | SubagentEntry
            if event.call.name == TASK_TOOL:
                entry = SubagentEntry(event.subject, event.call.arguments)
            else:
                entry = ToolEntry(event.call.name, event.subject, event.call.arguments)
            self.tools[event.call.id] = entry
            await self.activity.mount(entry)
        elif isinstance(event, ToolCallFinished):
            done = self.tools.get(event.call.id)
            if done is not None:
                label = f"{event.decision}: {event.summary}" if event.decision in ("denied", "blocked", "invalid") \
                    else event.summary or event.decision
                done.finish(label, event.result.content, failed=event.result.is_error)
        elif isinstance(event, ToolCallProgress):
            running = self.tools.get(event.call_id)
            if isinstance(running, ToolEntry):
                running.progressed(progress_text(event))
        elif isinstance(event, UsageReported):
            self.usage = self.usage + event.usage
            self._retitle()
        elif isinstance(event, TurnFinished):
            if self.reply is None and event.text:
                await self.activity.mount(Static(literal(event.text), classes="reply"))
            self.reply = None
        elif isinstance(event, (AgentWarning, TurnFailed)):
            text = event.text if isinstance(event, AgentWarning) else str(event.error)
            await self.activity.mount(Notice(text, "warning" if isinstance(event, AgentWarning) else "error"))
        elif isinstance(event, SubagentStarted | SubagentFinished | SubagentProgress):
            nested = self.tools.get(event.call_id)
            if isinstance(nested, SubagentEntry):
                if isinstance(event, SubagentStarted):
                    nested.started(event)
                elif isinstance(event, SubagentFinished):
                    nested.ended(event)
                else:
                    await nested.show(event.event)

    def replica(self) -> SubagentEntry:
        """A fresh copy (a widget cannot be mounted twice): the title and result; the transcript is in its session."""
        return SubagentEntry(self.subject, self.arguments, status=self.status, output=self.output, usage=self.usage,
                             session_id=self.session_id, failed=self.has_class("failed"))
