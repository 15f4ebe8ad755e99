"""What `zeph ask` shows of a turn: the reply on standard output, progress and warnings on standard error,
or, with `--json`, one JSON document at the end. What a running tool reports
(its progress) is one line on standard error, rewritten in place, only when
standard error is a terminal; it is cleared before anything else is printed.

Invariant: every reply the agent finishes reaches standard output, whatever
happened before it in the turn (tool rounds, a compaction and a retry): a new
`ReplyPrinter` starts after each block ends. Usage the provider did not report
is shown as zeph's estimate, marked `~` (`"estimated": true` in the JSON).
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

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
    ToolCallFinished,
    ToolCallProgress,
    ToolCallStarted,
    TurnFailed,
    TurnFinished,
    TurnQueued,
    TurnStarted,
    UsageReported,
)
from ..render import (
    subagents_usage_line,
    waiting_line,
    compaction_finished_line,
    compaction_started_line,
    length_cut_notice,
    progress_text,
    tool_finished_line,
    tool_started_line,
    usage_line,
)
from .reply_printer import ReplyPrinter
from .stderr import clear_status, eprint, show_status, warning_line
from ..usage_estimate import ShownUsage, reply_tokens, shown_usage, usage_dict

from ...messages import Usage

if TYPE_CHECKING:
    from ...context.report import ContextReport


class AskOutput(AgentEventHandler):
    """Prints one turn of `zeph ask`; `exit_code` is the command's status once the turn is over."""

    def __init__(self, *, session_id: int, provider: str, model: str, reply_limit: int,
                 stream: bool, markdown: bool, show_usage: bool, json_output: bool, terminal: bool = False) -> None:
        """`terminal`: standard error is a terminal, so a running tool's progress is shown on one line there."""
        self.session_id = session_id
        self.provider, self.model = provider, model
        self.reply_limit = reply_limit  # the max_tokens requests carry (for the length-cut warning)
        self.stream, self.markdown = stream, markdown
        self.show_usage, self.json_output = show_usage, json_output
        self.terminal = terminal
        self.exit_code = 0
        self.failure: TurnFailed | None = None  # the turn ended on this error
        self.result: dict[str, Any] = {"session": session_id, "tool_calls": []}
        self.report: ContextReport | None = None  # of the latest request
        self.usage = ShownUsage()  # the turn's usage so far, estimates included
        self.subagents: list[SubagentFinished] = []  # the sub-agents the turn ran, with the tokens they spent
        self._request_text: list[str] = []  # reply text of the latest request (for its estimate)
        self.printer = self._new_printer()

    def _new_printer(self) -> ReplyPrinter:
        return ReplyPrinter(markdown=self.markdown and not self.json_output, live=self.stream and not self.json_output)

    def end_reply_block(self) -> None:
        """Print what is pending of the reply and start a new block for whatever comes next."""
        clear_status()
        self.printer.finish()
        self.printer = self._new_printer()

    # ---- events ----------------------------------------------------------------------

    async def on_turn_queued(self, event: TurnQueued) -> None:
        eprint(waiting_line(event))

    async def on_turn_started(self, event: TurnStarted) -> None:
        self.result["user_message_id"] = event.user_message_id

    async def on_context_prepared(self, event: ContextPrepared) -> None:
        self.report = event.report
        self._request_text = []

    async def on_reply_delta(self, event: ReplyDelta) -> None:
        self._request_text.append(event.text)
        if not self.json_output:
            clear_status()
            self.printer.feed(event.text)

    async def on_tool_call_started(self, event: ToolCallStarted) -> None:
        self.end_reply_block()
        eprint(tool_started_line(event.call.name, event.subject))

    async def on_tool_call_finished(self, event: ToolCallFinished) -> None:
        eprint(tool_finished_line(event.decision, event.summary, event.result))
        self.result["tool_calls"].append({
            "id": event.call.id,
            "name": event.call.name,
            "arguments": event.call.arguments,
            "decision": event.decision,
            "is_error": event.result.is_error,
            "exit_code": event.exit_code,
            "duration_ms": event.duration_ms,
        })

    async def on_tool_call_progress(self, event: ToolCallProgress) -> None:
        if self.terminal:  # one line, rewritten in place and cleared before the next output
            show_status(f"  ⎿  {progress_text(event)}")

    async def on_warning(self, event: AgentWarning) -> None:
        eprint(warning_line(event.text))

    async def on_compaction_started(self, event: CompactionStarted) -> None:
        if event.kind != "soft":
            self.end_reply_block()
            eprint(compaction_started_line(event.kind))

    async def on_compaction_status(self, event: CompactionStatus) -> None:
        eprint(f"  ⎿  {event.text}")

    async def on_compaction_finished(self, event: CompactionFinished) -> None:
        result = event.result
        eprint(compaction_finished_line(result))
        self.result.setdefault("compactions", []).append({
            "kind": result.kind, "description": result.describe(), "tokens_before": result.tokens_before,
            "tokens_after": result.tokens_after, "probe_verdict": result.probe_verdict,
        })

    async def on_usage_reported(self, event: UsageReported) -> None:
        shown = shown_usage(event.usage, event.report.used_tokens, reply_tokens("".join(self._request_text)))
        self.usage = self.usage + shown
        if self.show_usage:
            self.end_reply_block()
            eprint(usage_line(shown, event.report))

    async def on_subagent_progress(self, event: SubagentProgress) -> None:
        inner = event.event
        if isinstance(inner, ToolCallStarted):  # what a sub-agent does, one line a call, indented under its task
            eprint("    " + tool_started_line(inner.call.name, inner.subject))
        elif isinstance(inner, AgentWarning):
            eprint("    " + warning_line(inner.text))
        elif isinstance(inner, ToolCallProgress) and self.terminal:
            show_status(f"      ⎿  {progress_text(inner)}")

    async def on_subagent_finished(self, event: SubagentFinished) -> None:
        self.subagents.append(event)

    def subagent_usage(self) -> Usage:
        """The tokens the turn's sub-agents spent, together."""
        return sum((run.usage for run in self.subagents), Usage())

    async def on_turn_failed(self, event: TurnFailed) -> None:
        self.end_reply_block()
        eprint(f"zeph: error: {event.error}")  # where the prompt is kept, the command says after the turn
        self.exit_code = event.error.exit_code
        self.failure = event

    async def on_turn_finished(self, event: TurnFinished) -> None:
        self.end_reply_block()
        if event.stop_reason == "length":
            eprint(warning_line(event.notice or length_cut_notice(self.reply_limit)))
        if self.show_usage and self.subagents:
            eprint(subagents_usage_line(len(self.subagents), self.subagent_usage()))
        if self.subagents:
            self.result["subagents"] = [
                {"call_id": run.call_id, "session": run.conversation_id, "outcome": run.outcome,
                 "tool_rounds": run.rounds, "usage": run.usage.to_dict()}
                for run in self.subagents
            ]
            self.result["subagent_usage"] = self.subagent_usage().to_dict()
        if self.json_output:
            self.result.update(
                message_id=event.message_id,
                provider=self.provider,
                model=self.model,
                content=event.text,
                stop_reason=event.stop_reason,
                usage=usage_dict(self.usage, event.usage),
                context=self.report.to_dict() if self.report else None,
            )
            print(json.dumps(self.result, indent=2, ensure_ascii=False))

    def close(self) -> None:
        """Print what is pending (an interrupted turn's partial reply)."""
        clear_status()
        self.printer.finish()
