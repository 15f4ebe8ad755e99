"""Modal screens: tool confirmation, the context inspector, the session picker; the /memory and /skills listings.

Invariant: a screen shows what it is given and dismisses with the user's
answer; confirmation dismisses with exactly "yes", "no" or "always", and
closing it any other way counts as "no".
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, ClassVar

from rich.markup import escape
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Vertical, VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import DataTable, Input, Static

from ...context.report import ContextReport
from ..render import cache_line, context_fill, context_rows, human_tokens, window_text
from ...tools.permissions import ApprovalRequest

BAR_WIDTH = 24


class ConfirmScreen(ModalScreen[str]):
    """y yes · n no · a always (this tool, this session); shows the full command or diff."""

    DEFAULT_CSS = """
    ConfirmScreen { align: center middle; }
    ConfirmScreen > Vertical {
        width: 90%; max-width: 120; height: auto; max-height: 90%;
        border: thick $warning; background: $surface; padding: 1 2;
    }
    ConfirmScreen #question { margin: 1 0 0 0; text-style: bold; }
    ConfirmScreen VerticalScroll { height: auto; max-height: 30; }
    """
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("y", "answer('yes')", "yes"),
        Binding("n", "answer('no')", "no"),
        Binding("a", "answer('always')", "always"),
        Binding("escape", "answer('no')", "no", show=False),
    ]

    def __init__(self, request: ApprovalRequest) -> None:
        super().__init__()
        self.request = request

    def compose(self) -> ComposeResult:
        request = self.request
        verb = {"exec": "Run", "write": "Write"}.get(request.kind, "Use")
        detail = f"$ {request.subject}" if request.tool == "bash" else (request.preview or request.subject)
        with Vertical():
            if request.asker:
                yield Static(f"asked by sub-agent: [b]{escape(request.asker)}[/b]", id="asker")
            yield Static(f"[b]{escape(request.tool)}[/b] wants to {'run' if request.kind == 'exec' else 'change a file'}:")
            with VerticalScroll():
                yield Static(escape(detail), id="detail")
            yield Static(
                f"{verb} with {escape(request.tool)}?  [b]y[/b] yes · [b]n[/b] no · "
                f"[b]a[/b] always {escape(request.tool)} in this session",
                id="question",
            )

    def action_answer(self, answer: str) -> None:
        self.dismiss(answer)


def bar(tokens: int, total: int, width: int = BAR_WIDTH) -> str:
    if total <= 0:
        return ""
    filled = min(round(width * tokens / total), width)
    return "█" * filled + "░" * (width - filled)


def context_table_rows(report: ContextReport, previous: ContextReport | None) -> list[tuple[str, ...]]:
    """(block, tokens, bar, share, change since the previous turn, detail) for the /context screen."""
    before = {b.name: b.tokens for b in previous.blocks} if previous else {}
    rows: list[tuple[str, ...]] = []
    for name, tokens, share, detail in context_rows(report):
        change = ""
        if previous is not None and name in before and tokens != before[name]:
            change = f"{tokens - before[name]:+,}"
        elif previous is not None and name not in before and name not in ("used", "free", "reserved for the reply"):
            change = "new"
        rows.append((name, f"{tokens:,}", bar(tokens, report.capacity) if share else "", share, change, detail))
    return rows


class ContextScreen(ModalScreen[None]):
    """The ContextReport of the next turn: blocks, tokens, bars, shares and what changed."""

    DEFAULT_CSS = """
    ContextScreen { align: center middle; }
    ContextScreen > Vertical {
        width: 95%; max-width: 130; height: auto; max-height: 95%;
        border: thick $accent; background: $surface; padding: 1 2;
    }
    ContextScreen DataTable { height: auto; max-height: 24; }
    ContextScreen .notes { color: $text-muted; margin: 1 0 0 0; }
    """
    BINDINGS: ClassVar[list[BindingType]] = [Binding("escape,q", "dismiss_screen", "close")]

    def __init__(
        self, report: ContextReport, previous: ContextReport | None = None, metrics: Sequence[str] = ()
    ) -> None:
        super().__init__()
        self.report = report
        self.previous = previous
        self.metrics = list(metrics)

    def compose(self) -> ComposeResult:
        report = self.report
        head = window_text(report)
        if report.capacity:
            head += (
                f" · budget {human_tokens(report.budget)} · context {context_fill(report)} · compaction at soft "
                f"{report.soft_threshold:.0%} / hard {report.hard_threshold:.0%}"
            )
        else:
            head += " · no budget (nothing is trimmed or compacted)"
        with Vertical():
            yield Static(f"[b]Context of the next turn[/b]\n{escape(head)}")
            table: DataTable[Any] = DataTable(zebra_stripes=True, cursor_type="none")
            table.add_columns("block", "tokens", "", "of prompt budget", "since last turn", "")
            for row in context_table_rows(report, self.previous):
                table.add_row(*row)
            yield table
            notes = [*report.compaction, *report.notes, cache_line(report), *self.metrics]
            if notes:
                yield Static(escape("\n".join(notes)), classes="notes")
            yield Static("[dim]esc closes[/dim]", classes="notes")

    def action_dismiss_screen(self) -> None:
        self.dismiss(None)


class SessionsScreen(ModalScreen["int | None"]):
    """Pick a session to switch to; typing filters (full-text search through the caller)."""

    DEFAULT_CSS = """
    SessionsScreen { align: center middle; }
    SessionsScreen > Vertical {
        width: 95%; max-width: 120; height: 80%; border: thick $accent; background: $surface; padding: 1 2;
    }
    SessionsScreen DataTable { height: 1fr; }
    """
    BINDINGS: ClassVar[list[BindingType]] = [Binding("escape", "close", "close")]

    def __init__(self, search, query: str = "") -> None:
        super().__init__()
        self.search = search  # (query) -> list of rows (id, title, when, messages)
        self.query_text = query

    def compose(self) -> ComposeResult:
        with Vertical():
            yield Static("[b]Sessions[/b] · type to search · enter opens · esc closes")
            yield Input(value=self.query_text, placeholder="search", id="search")
            table: DataTable[Any] = DataTable(cursor_type="row", zebra_stripes=True)
            table.add_columns("id", "title", "updated", "messages")
            yield table

    def on_mount(self) -> None:
        self._fill(self.query_text)
        self.query_one(DataTable).focus()

    def _fill(self, query: str) -> None:
        table = self.query_one(DataTable)
        table.clear()
        for session_id, title, when, count in self.search(query):
            table.add_row(str(session_id), title, when, str(count), key=str(session_id))

    def on_input_changed(self, event: Input.Changed) -> None:
        self._fill(event.value)

    def on_input_submitted(self, event: Input.Submitted) -> None:
        self.query_one(DataTable).focus()

    def on_data_table_row_selected(self, event: DataTable.RowSelected) -> None:
        if event.row_key.value is not None:  # each row's key is its session's id
            self.dismiss(int(event.row_key.value))

    def action_close(self) -> None:
        self.dismiss(None)
