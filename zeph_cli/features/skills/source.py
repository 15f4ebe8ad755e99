"""Skills as a context source: the skills matched to the running turn's message, as the last system layer.

Invariant: `prepare` matches skills to the turn's message (never raising: a broken embedder falls back
to keywords, said once); the block shows them within its share of the budget, pointing to load_skill
only when the request offers it. The skills block's module loads when a turn has skills.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ...context.blocks import SYSTEM_ORDER, Block, Source, TurnInput
from .tool_specs import LOAD_SKILL

if TYPE_CHECKING:
    from ...agent.source_host import SourceHost
    from ...context.report import ContextReport


class SkillsSource(Source):
    name = "skills"

    def __init__(self, agent: SourceHost) -> None:
        self.agent = agent
        self.notes: list[str] = []

    async def prepare(self, turn: TurnInput) -> list[Block]:
        self.notes = await self.agent.extras.match_skills(turn.prompt) if turn.prompt else []
        return self.blocks(turn)

    def blocks(self, turn: TurnInput) -> list[Block]:
        skills = self.agent.extras.skills_input()
        if skills is None:
            return []
        from ...context.skills_block import skills_block

        return [skills_block(skills, LOAD_SKILL.name, SYSTEM_ORDER["skills"])]

    def lines(self, report: ContextReport) -> list[str]:
        return self.agent.extras.skills_lines(loadable=LOAD_SKILL.name in self.agent.offered_tools().tools)

    def take_notes(self) -> list[str]:
        notes, self.notes = self.notes, []
        return notes
