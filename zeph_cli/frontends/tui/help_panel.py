"""The /help panel (also F1): every command and key on as few rows as the width allows.

Invariant: one row per command and two keys per row, with no rules between
rows, so at 100 columns it stays within the transcript of a 40-row terminal;
the app shows its top first, whatever its height.
"""

from __future__ import annotations

from rich.console import Group
from rich.table import Table
from rich.text import Text
from textual.widgets import Static

from .slash import HELP_NOTE, help_rows

USAGE_WIDTH = 30  # a longer usage wraps in its column, leaving the rest of the row to what it does


def help_renderable() -> Group:
    commands, keys = help_rows()
    table = Table.grid(padding=(0, 2))
    table.add_column(style="bold", max_width=USAGE_WIDTH)
    table.add_column()
    for usage, does in commands:
        table.add_row(Text(usage), Text(does))  # Text: a hint like [add TEXT] is not markup
    key_table = Table.grid(padding=(0, 2))
    for _ in range(2):
        key_table.add_column(style="bold", no_wrap=True)
        key_table.add_column()
    for i in range(0, len(keys), 2):
        pair = keys[i : i + 2]
        key_table.add_row(*[Text(cell) for keys_does in pair for cell in keys_does])
    return Group(
        Text("Commands", style="bold underline"),
        table,
        Text(HELP_NOTE, style="dim"),
        Text("Keys", style="bold underline"),
        key_table,
    )


class HelpPanel(Static):
    DEFAULT_CSS = "HelpPanel { margin: 1 0 0 0; padding: 0 1; background: $boost; }"

    def __init__(self) -> None:
        super().__init__(help_renderable())

    def replica(self) -> "HelpPanel":
        """A fresh copy, for the transcript to show again after pruning it."""
        return HelpPanel()
