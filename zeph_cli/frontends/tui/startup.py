"""The chat app while its session is still opening: what the header and status say, and what waits.

Invariant: nothing typed is lost while the session opens: one submission waits
here and is sent once the session is ready, or goes back to the input box if
it fails to open; a failure is kept as one line of text, never a traceback.
This module imports nothing heavy (no SDK, store or agent), so the first frame
does not wait for them.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

from rich.markup import escape

from ...errors import ZephError

Phase = Literal["starting", "ready", "failed"]


@dataclass
class Startup:
    phase: Phase = "starting"
    error: str = ""  # one line, when the session failed to open
    waiting: str | None = None  # a message or command submitted before the session was ready

    @property
    def ready(self) -> bool:
        return self.phase == "ready"

    def hold(self, text: str) -> bool:
        """Keep `text` to send when the session is ready; False when another one already waits."""
        if self.waiting is not None:
            return False
        self.waiting = text
        return True

    def take(self) -> str | None:
        """The waiting submission, handed over (once)."""
        text, self.waiting = self.waiting, None
        return text

    def failed(self, exc: BaseException, log_path: Any = None) -> str:
        """Record why the session could not open; return the line to show."""
        self.phase = "failed"
        self.error = failure_line(exc, log_path)
        return self.error

    def status_line(self) -> str:
        """What the status line says before the session is ready (markup)."""
        if self.phase == "failed":
            return "[b red]zeph could not start[/] · ctrl+q quits"
        waits = " · your message is sent once it is" if self.waiting is not None else ""
        return f"[dim]starting…{waits}[/dim]"


def failure_line(exc: BaseException, log_path: Any = None) -> str:
    """One line for an error opening the session: a `ZephError` says what to do; anything else is named,
    with where its traceback is."""
    if isinstance(exc, ZephError):
        return f"zeph could not start: {exc}"
    where = f" (traceback in {log_path})" if log_path else ""
    return f"zeph could not start: internal error: {type(exc).__name__}: {exc}{where}"


def starting_header(config: Any, session: str = "new session") -> str:
    """The header (markup) from the configuration alone, before the provider is resolved; `session` names
    the session being opened ("new session", "session 12", "last session")."""
    llm = config.llm
    provider = llm.provider or "auto provider"
    model = llm.model or "default model"
    return f"[b]zeph[/b] · {escape(provider)} · {escape(model)} · mode {escape(config.agent.mode)} · {escape(session)}"
