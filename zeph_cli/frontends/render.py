"""Text renderings of zeph's values for the terminal and for export.

Invariant: pure string building (no printing, no I/O); the CLI decides where
the text goes and whether it is rendered as Markdown.
"""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from ..context.report import ContextReport
from ..messages import TextPart, ToolResultPart, Usage
from .printable import printable
from .usage_estimate import ShownUsage

if TYPE_CHECKING:
    from ..agent.events import ToolCallProgress, TurnQueued
    from ..context.sent_text import SentSection


def human_tokens(n: int) -> str:
    if n >= 1_000_000:
        return f"{n / 1_000_000:.1f}M".replace(".0M", "M")
    if n >= 100_000:
        return f"{n / 1000:.0f}k"
    if n >= 10_000:
        return f"{n / 1000:.1f}k".replace(".0k", "k")
    if n >= 1_000:
        return f"{n / 1000:.1f}k"
    return str(n)


def usage_line(usage: ShownUsage, report: ContextReport | None) -> str:
    """`tokens: 1,234 in · 56 out · context: …`; figures the provider did not report are zeph's
    estimates, marked `~`."""
    parts = [f"tokens: {_figure(usage.input_tokens, usage.input_estimated)} in · "
             f"{_figure(usage.output_tokens, usage.output_estimated)} out"]
    if usage.cache_read_tokens or usage.cache_write_tokens:
        parts.append(f"cache: {usage.cache_read_tokens:,} read · {usage.cache_write_tokens:,} written")
    if report is not None:
        parts.append(f"context: {context_fill(report)}")
    line = " · ".join(parts)
    return line + (" (~ estimated: the provider reported no usage)" if usage.estimated else "")


def subagents_usage_line(runs: int, usage: Usage) -> str:
    """`sub-agents: 2 runs · tokens: 1,234 in · 56 out`: what a turn's sub-agents spent, beside its own usage."""
    line = f"sub-agents: {runs} run{'s' if runs != 1 else ''} · tokens: {usage.prompt_tokens:,} in · {usage.output_tokens:,} out"
    if usage.cache_read_tokens or usage.cache_write_tokens:
        line += f" · cache: {usage.cache_read_tokens:,} read · {usage.cache_write_tokens:,} written"
    return line


def context_fill(report: ContextReport) -> str:
    """How full the context is, on the one basis every front end uses: what the agent could send over the
    prompt budget (the budget minus the reply's reserve), as compaction measures it: `1.5k / 6.1k prompt
    budget (24%)`."""
    if not report.capacity:
        return f"{human_tokens(report.context_tokens)} (no budget)"
    return (f"{human_tokens(report.context_tokens)} / {human_tokens(report.capacity)} prompt budget "
            f"({report.usage_percent}%)")


def _figure(tokens: int, estimated: bool) -> str:
    return f"~{tokens:,}" if estimated else f"{tokens:,}"


def waiting_line(event: TurnQueued) -> str:
    """What `zeph ask` and `zeph compact` say while another zeph's turn holds the session."""
    who = f" ({event.holder})" if event.holder else ""
    return f"zeph: waiting for another zeph's turn on session {event.conversation_id} to end{who}…"


def length_cut_notice(limit: int) -> str:
    """What to say under a reply the length limit stopped (`limit`: the max_tokens it was sent with)."""
    at = f" of {limit:,} tokens" if limit > 0 else ""
    return f"the reply stopped at the length limit{at}: raise llm.max_tokens for longer replies"


def tool_started_line(name: str, subject: str) -> str:
    subject = " ".join(subject.split())
    if len(subject) > 100:
        subject = subject[:99] + "…"
    return f"⏺ {name} {subject}".rstrip()


PROGRESS_MESSAGE_CHARS = 80  # of a server's progress message shown on one line


def progress_text(event: ToolCallProgress) -> str:
    """What a running tool reported, for its line: `indexing files · 40%`, `running… · 3` (a count with no
    total), or the message alone; the server's words on one line, cut to `PROGRESS_MESSAGE_CHARS`."""
    message = " ".join(printable(event.message).split())
    if len(message) > PROGRESS_MESSAGE_CHARS:
        message = message[: PROGRESS_MESSAGE_CHARS - 1] + "…"
    percent = event.percent
    if percent is not None:
        amount = f"{percent}%"
    elif event.progress is not None and math.isfinite(event.progress):
        amount = f"{event.progress:,g}"
    else:
        amount = ""
    return " · ".join(part for part in (message or "running…", amount) if part)


def tool_finished_line(decision: str, summary: str, result: ToolResultPart) -> str:
    """`  ⎿ exit 0 · 12 lines`, or why the call did not run: `  ⎿ blocked: …`."""
    summary = " ".join(summary.split())
    if len(summary) > 160:
        summary = summary[:159] + "…"
    if decision in ("denied", "blocked", "invalid"):
        return f"  ⎿ {decision}: {summary}"
    if result.is_error and not summary.startswith(("failed", "exit", "timed out", "killed")):
        return f"  ⎿ error · {summary}"
    return f"  ⎿ {summary}"


COMPACTION_KINDS = {
    "soft": "pruning old tool outputs",
    "hard": "compacting the context",
    "proactive": "compressing the context",
    "reactive_retry": "the request did not fit: compacting the context",
    "manual": "compacting the context",
    "autonomous": "compacting the context (compress_context)",
    "redo": "the summarizer answers again: redoing the provisional summary",
}


def compaction_started_line(kind: str) -> str:
    return f"⏺ {COMPACTION_KINDS.get(kind, 'compacting the context')}…"


def compaction_finished_line(result: Any) -> str:
    """`⏺ context: compacted 30 messages into a summary: 12,000 → 3,000 tokens` (a `CompactionResult`)."""
    return f"⏺ context: {result.describe()}"


def window_text(report: ContextReport) -> str:
    """`window 2.0k (server: llama.cpp /props)`: the model's window and, when known, where it came from."""
    source = f" ({report.window_source})" if report.window_source else ""
    return f"window {human_tokens(report.window)}{source}"


def context_head_lines(report: ContextReport, session_id: int, provider: str, model: str, strategy: str) -> list[str]:
    """The lines `zeph context` prints above its table: session, model, window, budget, usage, thresholds."""
    budget = f"{human_tokens(report.budget)} budget" if report.budget else "no budget (no compaction)"
    lines = [f"session {session_id} · {provider} {model} · {window_text(report)} · {budget}"]
    if report.capacity:
        lines.append(
            f"context {context_fill(report)} · compaction at soft {report.soft_threshold:.0%} "
            f"/ hard {report.hard_threshold:.0%} · strategy {strategy}"
        )
    lines.append(cache_line(report))
    return lines


def cache_line(report: ContextReport) -> str:
    """How much of the system text stays the same from turn to turn, so a prompt cache can keep it (the tool
    schemas, before it on the wire, are not counted)."""
    stable = human_tokens(report.stable_prefix_tokens)
    if not report.first_changing:
        return f"cache-stable system text {stable}: every system layer stays the same from turn to turn"
    return (f"cache-stable system text {stable}: the layers before {report.first_changing}, "
            "which changes from turn to turn (and so does everything after it)")


def context_rows(report: ContextReport) -> list[tuple[str, int, str, str]]:
    """(block, tokens, share of the prompt budget, detail) for each block, then the totals. Shares are of
    the prompt budget (`ContextReport.capacity`), the basis of the gauge and `zeph ask -u`; the reply's
    reserve lies outside it."""
    def share(tokens: int) -> str:
        return f"{report.share_of_capacity(tokens):.1%}" if report.capacity else "-"

    rows = [(b.name, b.tokens, share(b.tokens), b.detail) for b in report.blocks]
    rows.append(("used", report.used_tokens, share(report.used_tokens), ""))
    if report.unsent_tokens:
        rows.append(("not sent (trimmed)", report.unsent_tokens, share(report.unsent_tokens), "summarized by the next compaction"))
    if report.budget:
        free = max(report.capacity - report.used_tokens, 0)
        rows.append(("free", free, share(free), ""))
        rows.append(("reserved for the reply", report.reserved_for_response, "", "beyond the prompt budget"))
    return rows


def sent_text_lines(sections: Sequence[SentSection]) -> list[str]:
    """`zeph context --text`: each block under a `══ name · tokens · detail` line, each of its messages
    under a `── role` line (tool calls after the text, a tool result's name and call id beside its role),
    the text itself untouched; the tool schemas one per tool, its parameters as JSON."""
    lines: list[str] = []
    for section in sections:
        if section.continued:
            head = f"{section.block} (continued)"
        else:
            head = " · ".join(filter(None, (section.block, f"{section.tokens:,} tokens", section.detail)))
        lines += ["", f"══ {head}"] if lines else [f"══ {head}"]
        for tool in section.tools:
            lines += [f"── {tool.name}", tool.description, "parameters: " + json.dumps(tool.parameters, ensure_ascii=False)]
        for message in section.messages:
            results = message.tool_results
            if results:
                for result in results:
                    lines += [f"── tool {result.name} ({result.tool_call_id})", result.content]
                continue
            lines.append(f"── {message.role}")
            text = "".join(p.text for p in message.parts if isinstance(p, TextPart))
            if text:
                lines.append(text)
            for call in message.tool_calls:
                lines.append(f"→ tool call {call.name} ({call.id}): {json.dumps(call.arguments, ensure_ascii=False)}")
    return lines


def short_time(iso: str) -> str:
    return iso.replace("T", " ")[:16]
