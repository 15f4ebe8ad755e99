"""Deciding and running one tool call the model made, with every safety check.

Invariant: each call goes through the same steps, in order — known tool, valid
arguments, blocked-command check, permission policy (and the user when it
asks), the run, secret redaction, size management — and ends as exactly one
`ToolResultPart` plus one audit row. A result's images are kept as they came
(at most MAX_RESULT_IMAGES; the rest are named in the text), never redacted or cut. Nothing raised by a tool escapes except
cancellation.
"""

from __future__ import annotations

import asyncio
import dataclasses
import os
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..images import with_placeholders
from ..messages import ToolCallPart, ToolResultPart
from ..store import ToolLog
from ..tools.base import Tool, ToolContext, ToolResult, ToolSet, validate_arguments
from ..tools.blocklist import blocked_reason, shell_subject
from ..tools.failures import ToolFailure
from ..tools.output import MAX_OUTPUT_CHARS, summary_request_prompt, truncate_output
from ..tools.permissions import ApprovalRequest, Approver, PermissionPolicy, ToolCallSubject
from ..tools.redact import redact_arguments, redact_secrets

Summarizer = Callable[[str], Awaitable[str]]
MAX_RESULT_IMAGES = 8  # images one tool result passes on to the model


def call_as_stored(call: ToolCallPart) -> ToolCallPart:
    """The call as the store keeps it: its arguments with secrets redacted (the run gets the real ones)."""
    return ToolCallPart(call.id, call.name, redact_arguments(call.arguments))


@dataclass(frozen=True)
class ToolOutcome:
    result: ToolResultPart
    decision: str  # auto | allowed | approved | denied | blocked | invalid | failed
    summary: str
    duration_ms: int | None = None
    exit_code: int | None = None
    kept_output_id: str | None = None


def interrupted_result(call: ToolCallPart, what: str = "interrupted by the user before it finished") -> ToolResultPart:
    return ToolResultPart(call.id, f"Not completed: {what}.", name=call.name, is_error=True)


@dataclass(frozen=True)
class CallChecks:
    """What decides whether a call runs: the blocklist (with extra patterns; `home` for its paths), then the
    permission policy, and the approver when the policy asks."""

    policy: PermissionPolicy
    approver: Approver
    blocked_patterns: tuple[str, ...] = ()
    home: Path | None = None


class ToolCallRunner:
    def __init__(
        self,
        *,
        tools: ToolSet,
        context: ToolContext,
        checks: CallChecks,
        log: ToolLog,
        conversation_id: int,
        summarizer: Summarizer | None = None,
        output_limit: Callable[[str], int] | None = None,
    ) -> None:
        self.tools = tools
        self.context = context
        self.policy = checks.policy
        self.approver = checks.approver
        self.log = log
        self.conversation_id = conversation_id
        self.blocked_patterns = checks.blocked_patterns
        self.summarizer = summarizer
        self.home = checks.home or Path(os.path.expanduser("~"))
        # Characters of this output the context can take now (the budget's share); 30,000 at most.
        self.output_limit = output_limit or (lambda text: MAX_OUTPUT_CHARS)
        # What running tools report as they go (a sub-agent's events), for the round to pass on.
        self.progress: asyncio.Queue[object] = asyncio.Queue()

    # ---- the steps ------------------------------------------------------------

    async def run(self, call: ToolCallPart, argument_error: str | None = None) -> ToolOutcome:
        tool = self.tools.get(call.name)
        if tool is None and call.name in self.context.withheld:
            why = self.context.withheld[call.name]
            return self._refuse(call, "invalid", f"{call.name} is not available here: {why}.", why)
        if tool is None:
            available = ", ".join(self.tools.names()) or "none"
            return self._refuse(
                call, "invalid", f"There is no tool named {call.name!r} here. Available tools: {available}.",
                f"no tool named {call.name!r} in this mode",
            )
        if argument_error:
            return self._refuse(call, "invalid", argument_error, argument_error)
        try:
            arguments = validate_arguments(tool.name, tool.parameters, call.arguments)
        except ToolFailure as exc:
            return self._refuse(call, "invalid", f"{exc}. Check the tool's schema and call it again.", str(exc))

        subject = self.subject(tool, arguments)
        if tool.name == "bash":
            reason = blocked_reason(
                arguments["command"],
                cwd=self.context.cwd,
                workspace=self.context.confinement.allowed,
                home=self.home,
                extra_patterns=self.blocked_patterns,
            )
            if reason:
                return self._refuse(
                    call, "blocked", f"Blocked: {reason}. This command is never run; do not retry it.", reason
                )

        kind = tool.kind_of_call(arguments, self.context)
        verdict = self.policy.decide(tool.name, kind, subject)
        decision = "auto" if kind == "read" else "allowed"
        if verdict.action == "deny":
            return self._refuse(call, "denied", f"Denied: {verdict.reason}. Do not retry this call.", verdict.reason)
        if verdict.action == "ask":
            answer = await self.approver(
                ApprovalRequest(tool.name, kind, subject.whole, arguments, self._preview(tool, arguments))
            )
            if answer.approval == "no":
                why = f" ({answer.reason})" if answer.reason else ""
                return self._refuse(
                    call,
                    "denied",
                    f"The user did not approve this call{why}. Do not retry it; adapt or ask the user.",
                    "not approved" + (" (no terminal to ask on; -y approves)" if "terminal" in answer.reason else ""),
                )
            if answer.approval == "always":
                self.policy.grant(tool.name)
            decision = "approved"
        return await self._execute(call, tool, arguments, decision)

    def subject(self, tool: Tool, arguments: dict[str, Any]) -> ToolCallSubject:
        whole = tool.subject(arguments)
        if tool.name == "bash":
            return shell_subject(
                whole, cwd=self.context.cwd, workspace=self.context.confinement.allowed, home=self.home
            )
        if getattr(tool, "server_id", None) is not None:
            return ToolCallSubject(whole)  # an MCP tool: its arguments mean what its server says, not paths here
        if "path" in arguments and isinstance(arguments["path"], str):
            spellings = {whole}
            try:
                resolved = self.context.confinement.resolve(whole, self.context.cwd)
                spellings.update({str(resolved), self.context.confinement.display(resolved)})
            except ToolFailure:
                pass
            return ToolCallSubject(whole, tuple(sorted(spellings)))
        return ToolCallSubject(whole)

    def _preview(self, tool: Tool, arguments: dict[str, Any]) -> str:
        preview = getattr(tool, "preview", None)
        if preview is not None:
            try:
                return str(preview(arguments, self.context))
            except Exception as exc:  # noqa: BLE001 — a preview must never stop the question being asked
                return f"(no preview: {exc})"
        return str(arguments.get("command", ""))

    async def _execute(self, call: ToolCallPart, tool: Tool, arguments: dict[str, Any], decision: str) -> ToolOutcome:
        started = time.monotonic()
        context = dataclasses.replace(self.context, call_id=call.id, progress=self.progress.put_nowait)
        try:
            result = await tool.run(arguments, context)
        except ToolFailure as exc:
            result = ToolResult(str(exc), is_error=True, summary=f"failed: {exc}")
        except (OSError, ValueError, UnicodeError, RuntimeError) as exc:
            message = f"{tool.name} failed: {type(exc).__name__}: {exc}"
            result = ToolResult(message, is_error=True, summary=f"failed: {message}")
        duration_ms = int((time.monotonic() - started) * 1000)
        content, kept_id = await self._manage_output(call, result.content)
        images = result.images[:MAX_RESULT_IMAGES]
        if len(result.images) > MAX_RESULT_IMAGES:
            content = with_placeholders(
                content, result.images[MAX_RESULT_IMAGES:], f"not sent: at most {MAX_RESULT_IMAGES} images a result"
            )
        outcome = ToolOutcome(
            ToolResultPart(call.id, content, name=call.name, is_error=result.is_error, images=images),
            decision,
            result.summary or ("error" if result.is_error else "done"),
            duration_ms,
            result.exit_code,
            kept_id,
        )
        self._audit(call, outcome, len(result.content))
        return outcome

    async def _manage_output(self, call: ToolCallPart, raw: str) -> tuple[str, str | None]:
        """Redact, then fit the size limit: kept in full for read_overflow, summarized or cut for the context."""
        text, _ = redact_secrets(raw)
        limit = min(self.output_limit(text), MAX_OUTPUT_CHARS)
        if len(text) <= limit:
            return text, None
        kept_id = self.log.save_output(self.conversation_id, call.id, text)
        if self.summarizer is not None:
            try:
                summary = (await self.summarizer(summary_request_prompt(call.name, text))).strip()
            except Exception:  # noqa: BLE001 — any failure of the summary call falls back to truncation
                summary = ""
            if summary:
                summary, _ = redact_secrets(summary)
                summary = truncate_output(summary, kept_id, limit).text
                return (
                    f"[Summary of a {len(text):,}-character output; read_overflow(id=\"{kept_id}\") pages through "
                    f"the full text.]\n{summary}",
                    kept_id,
                )
        return truncate_output(text, kept_id, limit).text, kept_id

    def _refuse(self, call: ToolCallPart, decision: str, message: str, summary: str) -> ToolOutcome:
        """`message` is for the model, `summary` the short version the user reads."""
        outcome = ToolOutcome(ToolResultPart(call.id, message, name=call.name, is_error=True), decision, summary)
        self._audit(call, outcome, 0, reason=message)
        return outcome

    def _audit(self, call: ToolCallPart, outcome: ToolOutcome, output_chars: int, reason: str = "") -> None:
        arguments = redact_arguments(call.arguments)
        self.log.record(
            self.conversation_id,
            tool_call_id=call.id,
            tool=call.name,
            arguments=arguments,
            decision=outcome.decision,
            reason=reason,
            exit_code=outcome.exit_code,
            is_error=outcome.result.is_error,
            duration_ms=outcome.duration_ms,
            output_chars=output_chars,
        )

    def record_interrupted(
        self, call: ToolCallPart, what: str = "interrupted by the user before it finished"
    ) -> ToolResultPart:
        result = interrupted_result(call, what)
        self._audit(call, ToolOutcome(result, "interrupted", "interrupted"), 0, reason="interrupted")
        return result
