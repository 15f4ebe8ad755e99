"""MCP discovery as a context source: starting the servers (once) and picking the turn's tools.

Invariant: it gives no block (its tools are offered with the others); it is prepared with the other
sources, under the longest of its servers' own start timeouts plus the sources' deadline, so a
server slower to start than it was given is said, never waited for beyond that.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ...context.blocks import Block, Source, TurnInput

if TYPE_CHECKING:
    from ...agent.source_host import SourceHost
    from ...context.report import ContextReport


class McpSource(Source):
    name = "MCP tools"

    def __init__(self, agent: SourceHost) -> None:
        self.agent = agent
        self.notes: list[str] = []
        mcp = agent.extras.mcp
        longest = max((c.entry.timeout for c in mcp.connections.values()), default=0.0) if mcp is not None else 0.0
        self.deadline = longest + agent.config.context.source_deadline_seconds

    async def prepare(self, turn: TurnInput) -> list[Block]:
        if turn.prompt:
            self.notes = await self.agent.extras.discover_mcp(turn.prompt, tools_wanted=not self.agent.tools_unavailable)
        return []

    def blocks(self, turn: TurnInput) -> list[Block]:
        return []

    def lines(self, report: ContextReport) -> list[str]:
        return self.agent.extras.mcp_lines()

    def take_notes(self) -> list[str]:
        notes, self.notes = self.notes, []
        return notes
