"""The worldbook's context source: the turn's triggered entries, at every position, within their share.

Invariant: blocks only from the entries the turn (or, outside one, the recent messages) triggered;
before and after go among the system layers, an_top, outlet and an_bottom just before the user
message, at_depth in the history; isolation and entries left out for room are report rows.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ...context.blocks import SYSTEM_ORDER, TURN_ORDER, Block, Placement, Source, TurnInput
from .turn import WorldbookLayers, layers_within

if TYPE_CHECKING:
    from ...agent.source_host import SourceHost

_POSITIONS = {  # position → (placement, order)
    "before": (Placement.SYSTEM, SYSTEM_ORDER["worldbook before"]),
    "after": (Placement.SYSTEM, SYSTEM_ORDER["worldbook after"]),
    "an_top": (Placement.BEFORE_TURN, TURN_ORDER["worldbook an_top"]),
    "outlet": (Placement.BEFORE_TURN, TURN_ORDER["worldbook outlet"]),
    "an_bottom": (Placement.BEFORE_TURN, TURN_ORDER["worldbook an_bottom"]),
}


class WorldbookSource(Source):
    name = "worldbook"

    def __init__(self, agent: SourceHost) -> None:
        self.agent = agent

    def blocks(self, turn: TurnInput) -> list[Block]:
        book = layers_within(self.agent.turn_worldbook, self.agent.worldbook.allowance(turn.available), turn.measure)
        return worldbook_blocks(book)


def worldbook_blocks(book: WorldbookLayers) -> list[Block]:
    """The worldbook's layers as blocks, by position; its notes (isolation, entries left out) as report rows."""
    blocks: list[Block] = []
    for position, (placement, order) in _POSITIONS.items():
        blocks += [Block(x.name, x.text, placement, order, detail=x.detail,
                         stable=placement is Placement.SYSTEM and x.name not in book.changing)
                   for x in getattr(book, position)]
    blocks += [Block(x.name, x.text, Placement.DEPTH, depth=depth, stable=False, detail=x.detail) for depth, x in book.depths]
    return blocks + [Block(note.name, placement=Placement.REPORT, detail=note.detail) for note in book.notes]
