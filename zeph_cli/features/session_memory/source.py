"""Session summaries and the user profile as a context source: "recent conversations" and "user profile".

Invariant: read-only; each block within its share of the budget, rendered from what is stored
(the worker that writes digests runs after replies, never here).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ...context.blocks import TURN_ORDER, Block, Placement, Source, TurnInput

if TYPE_CHECKING:
    from ...agent.source_host import SourceHost


class SessionMemorySource(Source):
    name = "session memory"

    def __init__(self, agent: SourceHost) -> None:
        self.agent = agent

    def blocks(self, turn: TurnInput) -> list[Block]:
        layers = self.agent.session_memory.layers(turn.conversation, turn.available)
        return [Block(x.name, x.text, Placement.BEFORE_TURN, TURN_ORDER[x.name], stable=False, detail=x.detail)
                for x in layers]
