"""The dialog for a server's form (MCP elicitation): its message, one input per field, accept / decline /
cancel.

Invariant: it dismisses with exactly one `ElicitationAnswer`; accept only with every field's value checked
(`form_values`: required fields, numbers and their range, lengths, formats, choices), else it stays open
with one line saying what is wrong; Esc, or closing it any other way, is cancel. The server's words are
shown as they are, never read as markup.
"""

from __future__ import annotations

from typing import Any, ClassVar

from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.screen import ModalScreen
from textual.widget import Widget
from textual.content import Content
from textual.widgets import Button, Checkbox, Input, Select, Static

from ..form_values import FormError, choice_labels, choice_value, default_text, field_hint, field_label, text_value
from ...tools.elicitation import ElicitationAnswer, ElicitationField, ElicitationRequest
from .transcript import literal


def field_widget(field: ElicitationField, index: int) -> Widget:
    """The input for one field: a checkbox for a yes/no, a select for a choice, else a text box."""
    widget_id = f"field-{index}"
    if field.kind == "boolean":
        return Checkbox(literal(field_label(field)), value=bool(field.default), id=widget_id, compact=True)
    if field.kind == "enum":
        options = [(Content(label), value) for label, value in zip(choice_labels(field), field.choices)]  # server text, never markup
        default = field.default if field.default in field.choices else Select.NULL
        return Select(options, value=default, allow_blank=True, prompt="(pick one)", id=widget_id, compact=True)
    kind = {"integer": "integer", "number": "number"}.get(field.kind, "text")
    return Input(value=default_text(field), placeholder=field_hint(field), type=kind,  # type: ignore[arg-type]
                 max_length=field.max_length or 0, id=widget_id, select_on_focus=False, compact=True)


class ElicitScreen(ModalScreen[ElicitationAnswer]):
    """A server asks the user to fill in a form (or just to confirm, when it has no fields)."""

    DEFAULT_CSS = """
    ElicitScreen { align: center middle; }
    ElicitScreen > Vertical {
        width: 90%; max-width: 110; height: auto; max-height: 95%;
        border: thick $accent; background: $surface; padding: 1 2;
    }
    ElicitScreen #message-box { height: auto; max-height: 8; margin: 1 0 0 0; }
    ElicitScreen #fields { height: auto; margin: 1 0 0 0; }
    ElicitScreen .label { margin: 1 0 0 0; text-style: bold; }
    ElicitScreen .description { color: $text-muted; }
    ElicitScreen #fields Input, ElicitScreen #fields Select { background: $boost; }
    ElicitScreen Checkbox { margin: 1 0 0 0; }
    ElicitScreen #error { color: $error; height: auto; margin: 1 0 0 0; }
    ElicitScreen #buttons { height: auto; margin: 1 0 0 0; }
    ElicitScreen #buttons Button { margin: 0 2 0 0; }
    ElicitScreen .hint { color: $text-muted; }
    """
    BINDINGS: ClassVar[list[BindingType]] = [Binding("escape", "cancel", "cancel", show=False)]
    AUTO_FOCUS = None  # the first field (or Accept) is focused on mount

    def __init__(self, request: ElicitationRequest) -> None:
        super().__init__()
        self.request = request

    def compose(self) -> ComposeResult:
        request = self.request
        with Vertical():
            if request.asker:
                yield Static(literal(f"asked by sub-agent: {request.asker}"), id="asker")
            yield Static(f"[b]MCP server {literal(request.server_id)}[/b] asks you:")
            with VerticalScroll(id="message-box", can_focus=False):
                yield Static(literal(request.message), id="message")
            if request.fields:
                with VerticalScroll(id="fields", can_focus=False):
                    for index, field in enumerate(request.fields):
                        if field.kind != "boolean":
                            yield Static(literal(field_label(field)), classes="label")
                        if field.description:
                            yield Static(literal(" ".join(field.description.split())), classes="description")
                        yield field_widget(field, index)
            yield Static("", id="error")
            with Horizontal(id="buttons"):
                yield Button("Accept", id="accept", variant="primary")
                yield Button("Decline", id="decline")
                yield Button("Cancel", id="cancel")
            yield Static("[dim]enter in a box or Accept sends it · Decline says no to the server · esc cancels · "
                         "* required[/dim]" if request.fields else "[dim]esc cancels[/dim]", classes="hint")

    def on_mount(self) -> None:
        self.fit()
        first = self.query("#fields Input, #fields Checkbox, #fields Select")
        (first.first() if first else self.query_one("#accept", Button)).focus(scroll_visible=False)
        if self.request.fields:  # the form from its top, whatever focusing scrolled
            self.call_after_refresh(self.query_one("#fields", VerticalScroll).scroll_home, animate=False)

    def on_resize(self) -> None:
        self.fit()

    def fit(self) -> None:
        """The fields scroll within what the screen leaves them, so the buttons always show."""
        if self.request.fields:
            message = min(len(self.request.message.splitlines()) or 1, 8)
            self.query_one("#fields").styles.max_height = max(4, self.size.height - 20 - message)

    def values(self) -> dict[str, Any]:
        """Every field's checked value (fields left empty that are not required are left out); `FormError`
        for the first that is not right, with that field focused."""
        out: dict[str, Any] = {}
        for index, field in enumerate(self.request.fields):
            widget = self.query_one(f"#field-{index}")
            try:
                if isinstance(widget, Checkbox):
                    value: Any = widget.value
                elif isinstance(widget, Select):
                    picked = widget.value
                    value = choice_value(field, None if picked is Select.NULL else str(picked))
                else:
                    assert isinstance(widget, Input)
                    value = text_value(field, widget.value)
            except FormError:
                widget.focus()
                raise
            if value is not None:
                out[field.name] = value
        return out

    def accept(self) -> None:
        try:
            content = self.values()
        except FormError as exc:
            self.query_one("#error", Static).update(literal(str(exc)))
            return
        self.dismiss(ElicitationAnswer("accept", content))

    def on_button_pressed(self, event: Button.Pressed) -> None:
        event.stop()
        if event.button.id == "accept":
            self.accept()
        elif event.button.id in ("decline", "cancel"):
            self.dismiss(ElicitationAnswer("decline" if event.button.id == "decline" else "cancel"))

    def on_input_submitted(self, event: Input.Submitted) -> None:
        event.stop()
        self.accept()

    def action_cancel(self) -> None:
        self.dismiss(ElicitationAnswer("cancel"))
