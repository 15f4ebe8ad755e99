"""The status line: the context gauge with its threshold marks, last turn's tokens, a standing note
("no tools"), a compaction badge.

Invariant: it renders only the last values it was given; updating it never
waits for anything. The gauge's modules are imported when there is a report
to draw, not before the first frame.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING

from rich.markup import escape
from textual.widgets import Static

from ...messages import Usage

if TYPE_CHECKING:
    from ...context.report import ContextReport

REDRAW_SECS = 0.25  # the live streamed-token figure is redrawn at most this often
LEVEL_STYLES = {"ok": "green", "soft": "yellow", "hard": "red", "over": "bold red"}


class StatusBar(Static):
    DEFAULT_CSS = """
    StatusBar { height: 1; padding: 0 1; background: $panel; color: $text; }
    """

    def __init__(self, **kwargs) -> None:
        super().__init__("", **kwargs)
        self.report: ContextReport | None = None
        self.usage: Usage | None = None
        self.request_tokens: int | None = None  # the estimate of the request `usage` is for
        self.badge = ""
        self.note = ""  # markup shown alone, e.g. while the session opens
        self.condition = ""  # a standing condition of the session ("no tools"), shown on every line
        self.attached = ""  # the files /attach staged for the next message
        self.streaming = False
        self.streamed_tokens = 0  # estimated from the reply text streamed this turn
        self._drawn_at = 0.0

    def add_streamed(self, text: str) -> None:
        """Count streamed reply text; the line is redrawn at most every `REDRAW_SECS` for it."""
        from ..usage_estimate import reply_tokens

        self.streamed_tokens += reply_tokens(text)
        now = time.monotonic()
        if now - self._drawn_at >= REDRAW_SECS:
            self._render_line()

    def show_note(self, markup: str) -> None:
        self.note = markup
        self._render_line()

    def show_attached(self, text: str) -> None:
        self.attached = text
        self._render_line()

    def show_report(self, report: "ContextReport") -> None:
        self.report = report
        self._render_line()

    def show_usage(self, usage: Usage, request_tokens: int | None = None) -> None:
        """The usage the provider reported for a request, with that request's own estimate
        (`ContextReport.used_tokens`) to stand in for the input when none was reported."""
        self.usage = usage
        self.request_tokens = request_tokens
        self._render_line()

    def show_badge(self, text: str) -> None:
        self.badge = text
        self._render_line()

    def set_streaming(self, streaming: bool) -> None:
        self.streaming = streaming
        if streaming:
            self.streamed_tokens = 0
            self.usage = None
            self.request_tokens = None
        self._render_line()

    def line(self) -> str:
        if self.note:
            return self.note
        from ..render import human_tokens
        from .gauge import gauge_for, usage_text

        parts = []
        if self.report is not None:
            view = gauge_for(self.report)
            style = LEVEL_STYLES.get(view.level, "")
            parts.append(f"context [{style}]{escape(view.bar)}[/] {escape(view.label)}")
        if self.usage is not None or (self.streamed_tokens and not self.streaming):
            request_tokens = self.request_tokens
            if request_tokens is None and self.report is not None:
                request_tokens = self.report.used_tokens
            text = usage_text(self.usage or Usage(), request_tokens, self.streamed_tokens)
            if text:
                parts.append(escape(text))
        if self.note:
            parts.append(f"[yellow]{escape(self.note)}[/yellow]")
        if self.condition:
            parts.append(f"[yellow]{escape(self.condition)}[/yellow]")
        if self.attached:
            parts.append(escape(self.attached))
        if self.badge:
            parts.append(f"[reverse] {escape(self.badge)} [/reverse]")
        elif self.streaming:
            received = f" ~{human_tokens(self.streamed_tokens)} tokens" if self.streamed_tokens else ""
            parts.append(f"[dim]streaming{received} · esc cancels[/dim]")
        return " · ".join(parts)

    def _render_line(self) -> None:
        self._drawn_at = time.monotonic()
        self.update(self.line(), layout=False)  # one row, always: a repaint, never a layout pass
