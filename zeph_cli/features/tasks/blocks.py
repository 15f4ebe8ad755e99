"""The `<todo>` block: the session's task list, sent just before the user message.

Invariant: pure values. The block is present only when the list has items; it takes its own small share
of the budget and never more: when the list does not fit, completed items are left out first (oldest
first, said in a line), then items are cut from the end, then item texts are cut. It is a block, not
history, so compaction never touches it; it is placed last before the running turn (`TURN_ORDER`) so a
list changed mid-turn invalidates as little of a provider's cached prefix as can be.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import NamedTuple

from ...context.blocks import TURN_ORDER, Block, Fitted, Placement, Room, Shrink
from ...tokens import MESSAGE_OVERHEAD
from .items import COMPLETED, TaskItem, render_item, tally

TODO = "todo"
TODO_SHARE = 0.03  # of the available budget: ~240 tokens at 8k, ~1,000 at 32k
UNBUDGETED_TODO_TOKENS = 2000  # its cap when there is no budget to take a share of
HEAD = "Your task list (update it with todo_write; [>] in progress, [x] completed, [ ] pending, [-] abandoned):"
MIN_TEXT_CHARS = 12  # an item's text is cut no shorter than this


def todo_text(lines: Sequence[str]) -> str:
    return "<todo>\n" + HEAD + "\n" + "\n".join(lines) + "\n</todo>" if lines else ""


class TodoEntries(NamedTuple):
    """The list, fitted to its room (see the module's invariant)."""

    items: tuple[TaskItem, ...]

    def __bool__(self) -> bool:
        return bool(self.items)

    def fit(self, room: Room) -> Fitted:
        if room.allowance <= MESSAGE_OVERHEAD or not self.items:
            return Fitted()
        detail = tally(self.items)

        def fits(lines: list[str]) -> bool:
            return room.measure(todo_text(lines)) <= room.allowance

        items = list(self.items)
        lines = [render_item(i) for i in items]
        if fits(lines):
            return Fitted(todo_text(lines), detail, tuple(i.id for i in items))
        done = [i for i in items if i.status == COMPLETED]
        hidden = 0
        while done:  # completed items go first, oldest first
            items.remove(done.pop(0))
            hidden += 1
            lines = [_hidden_line(hidden)] + [render_item(i) for i in items]
            if fits(lines):
                return Fitted(todo_text(lines), f"{detail} ({hidden} completed not sent)", tuple(i.id for i in items))
        head = [_hidden_line(hidden)] if hidden else []
        while len(items) > 1 and not fits(head + [render_item(i) for i in items]):  # then whole items from the end
            items.pop()
        lines = head + [render_item(i) for i in items]
        while not fits(lines) and len(lines[-1]) > MIN_TEXT_CHARS:  # then the last one's text
            lines[-1] = lines[-1][: max(MIN_TEXT_CHARS, len(lines[-1]) * 2 // 3)].rstrip() + "…"
        if not fits(lines):
            return Fitted()
        return Fitted(todo_text(lines), f"{detail} (cut to fit)", tuple(i.id for i in items))


def _hidden_line(count: int) -> str:
    return f"({count} completed item{'s' if count != 1 else ''} not shown)"


def todo_block(items: Sequence[TaskItem]) -> Block | None:
    """The `<todo>` block for `items`, or None when the list is empty."""
    if not items:
        return None
    return Block(TODO, TodoEntries(tuple(items)), Placement.BEFORE_TURN, TURN_ORDER[TODO], share=TODO_SHARE,
                 cap=UNBUDGETED_TODO_TOKENS, shrink=Shrink.ENTRIES, stable=False)
