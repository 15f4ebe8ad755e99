"""Long-term memory and semantic recall as a context source: the `<memory>` block and the recall block.

Invariant: `prepare` recalls for the running turn's message (the embedding runs in a thread) and
keeps what it found as the agent's turn memory, whose notes (a keyword fallback, recall skipped, an
index problem) are the turn's to say; the blocks come from that alone: `<memory>` just before the
user message, recall in its allocation slot (it never trims the history).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ...context.blocks import TURN_ORDER, Block, Placement, Source, TurnInput
from ...context.recall_block import RECALL_BLOCK, recall_block

if TYPE_CHECKING:
    from ...agent.source_host import SourceHost


class MemorySource(Source):
    name = "memory"

    def __init__(self, agent: SourceHost) -> None:
        self.agent = agent
        self.notes: list[str] = []

    async def prepare(self, turn: TurnInput) -> list[Block]:
        assert self.agent.memory is not None
        self.notes = []
        if turn.prompt:
            visible = {item.id for item in turn.history}
            self.agent.turn_memory = await self.agent.memory.prepare(
                turn.conversation_id, turn.prompt, visible, self.agent.memory_chars()
            )
            self.notes = list(self.agent.turn_memory.notes)
        return self.blocks(turn)

    def take_notes(self) -> list[str]:
        notes, self.notes = self.notes, []
        return notes

    def blocks(self, turn: TurnInput) -> list[Block]:
        memory = self.agent.turn_memory
        blocks = [Block("memory", memory.memory_text, Placement.BEFORE_TURN, TURN_ORDER["memory"], stable=False)]
        if memory.entries:
            blocks.append(recall_block(memory.entries, TURN_ORDER[RECALL_BLOCK]))
        return blocks
