"""The prompt box: a multi-line TextArea where Enter sends and Up/Down recall earlier inputs.

Invariant: the text is never lost by a key press — it leaves the box only in
a `Submitted` message (and comes back with Up); Shift+Enter and Ctrl+J insert
a newline, since Shift+Enter does not reach every terminal. PageUp/PageDown
page the transcript above.
"""

from __future__ import annotations

from textual import events
from textual.message import Message
from textual.widgets import TextArea


class PromptInput(TextArea):
    DEFAULT_CSS = """
    PromptInput {
        height: auto;
        max-height: 12;
        min-height: 3;
        border: round $accent 50%;
    }
    PromptInput:focus {
        border: round $accent;
    }
    """

    class Submitted(Message):
        def __init__(self, text: str) -> None:
            super().__init__()
            self.text = text

    class Complete(Message):
        """Tab on a slash command: complete it."""

    class PageTranscript(Message):
        """PageUp/PageDown in the prompt: page the transcript (the prompt is small and never needs it)."""

        def __init__(self, pages: int) -> None:
            super().__init__()
            self.pages = pages

    class Edited(Message):
        """The text changed (for slash-command completion); TextArea.Changed is the base class's own."""

        def __init__(self, text: str) -> None:
            super().__init__()
            self.text = text

    def __init__(self, sent: list[str] | None = None, **kwargs) -> None:
        super().__init__(soft_wrap=True, show_line_numbers=False, tab_behavior="focus", **kwargs)
        self.sent: list[str] = list(sent or [])
        self._recall: int | None = None  # index into history while recalling
        self._draft = ""

    def check_consume_key(self, key: str, character: str | None = None) -> bool:
        """Tab stays in the prompt (it completes a /command or an @server:uri) instead of moving the focus away."""
        return key == "tab" or super().check_consume_key(key, character)

    async def _on_key(self, event: events.Key) -> None:
        if event.key == "enter":
            event.prevent_default()
            event.stop()
            self._submit()
            return
        if event.key == "tab":
            event.prevent_default()
            event.stop()
            if (self.text.startswith("/") and "\n" not in self.text) or "@" in self.text:  # a command, an @server:uri
                self.post_message(self.Complete())
            return
        if event.key in ("pageup", "pagedown"):
            event.prevent_default()
            event.stop()
            self.post_message(self.PageTranscript(-1 if event.key == "pageup" else 1))
            return
        if event.key in ("shift+enter", "ctrl+j"):
            event.prevent_default()
            event.stop()
            self.insert("\n")
            return
        if event.key == "up" and self.cursor_location[0] == 0 and self._recall_previous():
            event.prevent_default()
            event.stop()
            return
        if event.key == "down" and self.cursor_location[0] == self.document.line_count - 1 and self._recall_next():
            event.prevent_default()
            event.stop()
            return
        await super()._on_key(event)

    def _on_text_area_changed(self, event: TextArea.Changed) -> None:
        self.post_message(self.Edited(self.text))

    def _submit(self) -> None:
        text = self.text
        if not text.strip():
            return
        if not self.sent or self.sent[-1] != text:
            self.sent.append(text)
        self._recall = None
        self._draft = ""
        self.clear()
        self.post_message(self.Submitted(text))

    def _show(self, text: str) -> None:
        self.text = text
        self.move_cursor(self.document.end)

    def _recall_previous(self) -> bool:
        if not self.sent:
            return False
        if self._recall is None:
            self._draft = self.text
            self._recall = len(self.sent)
        if self._recall == 0:
            return True
        self._recall -= 1
        self._show(self.sent[self._recall])
        return True

    def _recall_next(self) -> bool:
        if self._recall is None:
            return False
        self._recall += 1
        if self._recall >= len(self.sent):
            self._recall = None
            self._show(self._draft)
        else:
            self._show(self.sent[self._recall])
        return True
