"""The task list as a context source: the `<todo>` block.

Invariant: reads the stored list for every request (a todo_write mid-turn shows in the turn's next
request); no block when the list is empty or the session is not stored yet.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ...context.blocks import Block, Source, TurnInput
from .blocks import todo_block
from .registry import task_items

if TYPE_CHECKING:
    from ...agent.source_host import SourceHost


class TasksSource(Source):
    name = "tasks"

    def __init__(self, agent: SourceHost) -> None:
        self.agent = agent

    def blocks(self, turn: TurnInput) -> list[Block]:
        if not turn.conversation_id:
            return []
        block = todo_block(task_items(self.agent.store.db, turn.conversation_id))
        return [block] if block is not None else []
