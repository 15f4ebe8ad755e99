"""Printing a reply on standard output: raw text on a pipe, live Markdown on a terminal.

Invariant: every piece of text fed to a printer reaches standard output once,
by the time `finish()` returns — streamed as it arrives (`live`) or all at the
end; a finished printer takes no more text (the caller starts a new one for the
next reply block). Rich is imported only when Markdown is rendered.
"""

from __future__ import annotations

import sys
import time
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from rich.live import Live


class ReplyPrinter:
    """One block of reply text (up to a tool call, a compaction or the end of the turn)."""

    REFRESH_SECONDS = 0.08

    def __init__(self, *, markdown: bool, live: bool) -> None:
        self.markdown = markdown
        self.live = live
        self.buffer: list[str] = []
        self._live: Live | None = None
        self._last = 0.0
        self._done = False

    @property
    def text(self) -> str:
        return "".join(self.buffer)

    def feed(self, text: str) -> None:
        if self._done:
            raise RuntimeError("this reply block is finished: start a new printer")
        self.buffer.append(text)
        if not self.markdown:
            if self.live:
                sys.stdout.write(text)
                sys.stdout.flush()
            return
        if not self.live:
            return
        if self._live is None:
            self._live = self._start_live()
        now = time.monotonic()
        if now - self._last >= self.REFRESH_SECONDS:
            self._live.update(self._markdown(self.text))
            self._last = now

    def _start_live(self) -> Live:
        """Import Rich's renderers once, on the first token (not at start-up, not per token)."""
        from rich.live import Live
        from rich.markdown import Markdown

        self._markdown = Markdown
        live = Live(Markdown(""), refresh_per_second=12, vertical_overflow="visible", transient=False)
        live.start()
        return live

    def finish(self) -> None:
        if self._done:
            return
        self._done = True
        text = self.text
        if self.markdown:
            from rich.markdown import Markdown

            if self._live is not None:
                self._live.update(Markdown(text))
                self._live.stop()
            elif text:
                from rich.console import Console

                Console().print(Markdown(text))
            return
        if not self.live and text:
            sys.stdout.write(text)
        if text and not text.endswith("\n"):
            sys.stdout.write("\n")
        sys.stdout.flush()
