"""What a turn adds from outside zeph itself: skills matched to the message, MCP servers' tools, and the
project's code index.

Invariant: `prepare()` never raises (but for cancellation); before it ran, or without skills and servers, a
turn gets no skills layer and no MCP tools. A turn waits only for MCP servers that were never listed (the
manager offers the others' cached tools and starts a server when one of its tools is called); `start_mcp()`
(for /mcp) starts them all. Problems are returned as notes, each said once. Which of the MCP tools a mode offers is the tool offer's (`Tool.offered_in`), and
load_skill is the skills feature's declared tool, offered while the turn has skills.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from typing import TYPE_CHECKING


if TYPE_CHECKING:
    from ..context.skills_block import SkillsInput
    from .mcp.manager import McpManager
    from .mcp.tools import McpTool
    from .skills.model import TurnSkills
    from .skills.service import SkillService
    from .code_index.service import CodeIndex


@dataclass
class TurnExtras:
    """Skills, MCP servers and the code index an agent offers, and what they gave the running turn."""
    skills: SkillService | None = None
    mcp: McpManager | None = None
    code_index: CodeIndex | None = None  # the project's code index (None: off here)
    prompt_mode: str = "auto"
    turn_skills: TurnSkills | None = None
    mcp_tools: list[McpTool] = field(default_factory=list)  # offered this turn (discovery applied)
    mcp_total: int = 0  # tools of the running servers before discovery
    mcp_priority: list[str] = field(default_factory=list)  # MCP tools' names, first to keep first (when ranked)
    mcp_left_out: int = 0  # offered MCP tools the agent left out because their schemas did not fit the budget
    _mcp_generation: int | None = None  # the manager's generation the turn's pick was made at (None: no pick)
    _mcp_known: frozenset[str] = frozenset()  # every MCP tool's name then (picked or not)

    async def prepare(self, message: str, *, tools_wanted: bool) -> list[str]:
        """Match skills to `message`; start MCP servers (once) when the turn can use tools, and pick their tools."""
        return await self.match_skills(message) + await self.discover_mcp(message, tools_wanted=tools_wanted)

    async def match_skills(self, message: str) -> list[str]:
        """Match skills to `message` (none until it is done: a match cut short leaves none); notes."""
        if self.skills is None:
            return []
        self.turn_skills = None
        self.turn_skills = await self.skills.match(message)
        return self.skills.take_warnings()

    async def discover_mcp(self, message: str, *, tools_wanted: bool) -> list[str]:
        """Start the MCP servers never listed when the turn can use tools, and pick their tools for `message`; notes."""
        if self.mcp is None or not tools_wanted:
            return []
        self.mcp_tools, self.mcp_priority = [], []  # none until picked: a discovery cut short offers none
        self._mcp_generation = None
        notes = await self.mcp.prepare_turn()
        generation = self.mcp.generation
        running = self.mcp.tools()
        self.mcp_total = len(running)
        self.mcp_tools = await self.mcp.select_tools(message, running) if running else []
        self._mcp_generation, self._mcp_known = generation, frozenset(t.name for t in running)
        self.mcp_priority = []  # ranked by `rank_mcp` when the budget cannot take them all
        return notes

    def current_mcp_tools(self) -> list[McpTool]:
        """The turn's MCP tools as of now: when a server listed its tools anew since the pick (list_changed, a
        start), the picked ones it still has, and every tool new since, from the next request on."""
        if self.mcp is None or self._mcp_generation is None or self.mcp.generation == self._mcp_generation:
            return self.mcp_tools  # (no pick this turn: no MCP tools)
        generation = self.mcp.generation
        now = self.mcp.tools()
        picked = {t.name for t in self.mcp_tools}
        self.mcp_tools = [t for t in now if t.name in picked or t.name not in self._mcp_known]
        self.mcp_total = len(now)
        self._mcp_generation, self._mcp_known = generation, frozenset(t.name for t in now)
        return self.mcp_tools

    async def rank_mcp(self, message: str) -> list[str]:
        """Order this turn's MCP tools for a budget that fits only some (see `mcp_least_wanted`); notes."""
        if self.mcp is None or not self.mcp_tools:
            return []
        self.mcp_priority = [t.name for t in await self.mcp.rank_tools(message, self.mcp_tools)]
        return self.mcp.take_warnings()

    async def start_mcp(self) -> list[str]:
        """Start every MCP server that is not running (/mcp in the chat app); the manager shares a start in
        progress, and a caller cancelled while waiting leaves the start going and its notes to the next."""
        if self.mcp is None:
            return []
        return await self.mcp.start()

    def reset(self) -> None:
        """Forget the last turn's matches (a session switch): the next turn matches again."""
        self.turn_skills = None
        self.mcp_tools = []
        self.mcp_priority = []
        self.mcp_left_out = 0
        self._mcp_generation = None

    def skills_input(self, *, loadable: bool = True) -> SkillsInput | None:
        """The turn's skills for the skills layer; `loadable`: load_skill is offered to the model."""
        turn = self.turn_skills
        if turn is None or not (turn.matched or turn.others):
            return None
        from ..context.skills_block import SkillsInput

        return SkillsInput(tuple(m.skill for m in turn.matched), tuple(turn.others), self.prompt_mode, loadable)

    def mcp_least_wanted(self, names: set[str]) -> list[str]:
        """Of `names`, the MCP tools to leave out first when tool schemas do not fit the budget."""
        return [name for name in reversed(self.mcp_priority) if name in names]

    def lines(self, *, loadable: bool = True) -> list[str]:
        """What `zeph context` and `/context` say about skills and MCP tools this turn; `loadable`: load_skill
        is offered (without it, matched skills go in full or not at all and the others are not listed)."""
        return self.skills_lines(loadable=loadable) + self.mcp_lines()

    def skills_lines(self, *, loadable: bool = True) -> list[str]:
        """What `zeph context` says about the skills matched this turn."""
        out: list[str] = []
        turn = self.turn_skills
        if turn is not None and (turn.matched or turn.others):
            others = len(turn.others)
            rest = (f"{others} other{'' if others == 1 else 's'} listed" if loadable else
                    "sent in full, as many as fit, and no other listed: the model is not offered load_skill")
            if turn.matched:
                shown = ", ".join(f"{m.skill.name} ({m.score:.2f}, {m.reason})" for m in turn.matched)
                out.append(f"skills: matched {shown}; {rest}")
            elif loadable:
                out.append(f"skills: none matched this message; {others} listed")
            else:
                out.append("skills: none matched this message; none listed: the model is not offered load_skill")
        return out

    def mcp_lines(self) -> list[str]:
        """What `zeph context` says about the MCP servers and the tools offered this turn."""
        out: list[str] = []
        if self.mcp is not None:
            status = self.mcp.status()
            running = sum(s.state == "running" for s in status)
            waiting = sum(s.state == "not started" and bool(s.tools) for s in status)
            offered = len(self.mcp_tools) - self.mcp_left_out
            note = f" ({offered} offered this turn)" if offered != self.mcp_total else ""
            if self.mcp_left_out:
                note = f" ({offered} offered this turn; {self.mcp_left_out} more did not fit the budget for tool schemas)"
            cached = f", {waiting} listed from the cache (started on first call)" if waiting else ""
            out.append(f"mcp: {running} of {len(status)} servers running{cached}, {self.mcp_total} tools{note}")
        return out

    async def aclose(self) -> None:
        if self.code_index is not None:
            await asyncio.to_thread(self.code_index.close)  # a build stops at its next file; reads end
        if self.mcp is not None:
            await self.mcp.aclose()  # servers still starting are stopped too
