"""The task list beside the transcript: the session's checklist as todo_write last wrote it.

Invariant: shows what it is given (`show`), never reads the store itself; hidden while the list is empty
and while the user has folded it away (`toggle`: Ctrl+T or /tasks), which holds until unfolded again,
whatever the list becomes meanwhile.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from rich.text import Text
from textual.widgets import Static

if TYPE_CHECKING:
    from ...features.tasks.items import TaskItem

_STYLE = {"pending": ("○", ""), "in_progress": ("◐", "bold"), "completed": ("●", "dim"), "abandoned": ("✕", "dim strike")}


def checklist(items: Sequence[TaskItem]) -> Text:
    """The list as the panel shows it: a heading with its tally, then one line per item."""
    done = sum(1 for i in items if i.status == "completed")
    text = Text(f"Tasks {done}/{len(items)}\n", style="bold underline")
    for item in items:
        mark, style = _STYLE.get(item.status, ("?", ""))
        text.append(f"{mark} ", style="bold" if item.status == "in_progress" else "")
        text.append(item.text + "\n", style=style)
    return text


class TaskList(Static):
    DEFAULT_CSS = """
    TaskList { width: 32; max-width: 40%; height: auto; max-height: 100%; padding: 0 1; margin: 1 0 0 0;
               border-left: vkey $primary-background; display: none; }
    TaskList.shown { display: block; }
    """

    def __init__(self, **kwargs) -> None:
        super().__init__("", **kwargs)
        self.items: tuple[TaskItem, ...] = ()
        self.folded = False

    def show(self, items: Sequence[TaskItem]) -> None:
        self.items = tuple(items)
        if self.items:
            self.update(checklist(self.items))
        self.set_class(bool(self.items) and not self.folded, "shown")

    def toggle(self) -> bool:
        """Fold or unfold the panel; whether it is unfolded now."""
        self.folded = not self.folded
        self.show(self.items)
        return not self.folded
