"""MCP discovery as a context source: starting the servers (once), picking the turn's tools, and the
servers' instructions.

Invariant: its tools are offered with the others; its one block is the instructions of the servers whose
tools are offered this turn (see `instructions`), placed with the cached context after the system layers,
within a small share of the budget. It is prepared with the other sources, under the longest of its
servers' own start timeouts plus the sources' deadline, so a server slower to start than it was given is
said, never waited for beyond that. A server's withheld instructions are said once per session.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ...context.blocks import Block, Placement, Shrink, Source, TurnInput
from .instructions import BLOCK_CAP, BLOCK_NAME, BLOCK_SHARE, Instructions, instructions_block

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
        self.instructions = Instructions("", (), (), ())
        self._said_withheld: set[str] = set()

    async def prepare(self, turn: TurnInput) -> list[Block]:
        if turn.prompt:
            self.notes = await self.agent.extras.discover_mcp(turn.prompt, tools_wanted=not self.agent.tools_unavailable)
            self.instructions = self._instructions()
            for server_id, flags in self.instructions.withheld:
                if server_id not in self._said_withheld:
                    self._said_withheld.add(server_id)
                    self.notes.append(f"MCP server {server_id}: its instructions matched a prompt-injection pattern "
                                      f"({', '.join(flags)}); they are withheld from the model")
        return []

    def _instructions(self) -> Instructions:
        mcp = self.agent.extras.mcp
        if mcp is None:
            return Instructions("", (), (), ())
        offered = {t.server_id for t in self.agent.extras.mcp_tools}
        given = [(c.id, c.instructions) for c in mcp.connections.values() if c.id in offered and c.instructions]
        from ...tokens import default_counter

        return instructions_block(given, default_counter().count)

    def blocks(self, turn: TurnInput) -> list[Block]:
        found = self.instructions
        if not found.text:
            return []
        detail = "from " + ", ".join(found.servers) + (f" ({', '.join(found.cut)} cut to 500 tokens)" if found.cut else "")
        return [Block(BLOCK_NAME, found.text, Placement.CONTEXT, share=BLOCK_SHARE, cap=BLOCK_CAP,
                      shrink=Shrink.TRUNCATE, detail=detail)]

    def lines(self, report: ContextReport) -> list[str]:
        return self.agent.extras.mcp_lines()

    def take_notes(self) -> list[str]:
        notes, self.notes = self.notes, []
        return notes
