"""What a running tool may report to the front ends before it ends: how far it got, and warnings.

Invariant: values only. A tool passes them to `ToolContext.progress`; the tool round yields them as agent
events unchanged (`agent/events.py` makes them part of `AgentEvent`), so a tool never imports the agent.
"""

from __future__ import annotations

import math
from dataclasses import dataclass


@dataclass(frozen=True)
class ToolCallProgress:
    """A running tool reported how far it got (an MCP server's progress notification)."""

    call_id: str
    message: str = ""
    progress: float | None = None
    total: float | None = None  # None: the server did not say how much there is

    @property
    def percent(self) -> int | None:
        if self.progress is None or not self.total or not math.isfinite(self.progress) or not math.isfinite(self.total):
            return None  # (1e400 is valid JSON: inf)
        return max(0, min(100, round(100 * self.progress / self.total)))


@dataclass(frozen=True)
class AgentWarning:
    """Something the user should know that did not stop the turn."""

    text: str
