"""The transcript: user turns, streamed Markdown replies, collapsible tool calls, dividers, notices.

Invariant: entries only render what they are given (events or transcript
items) — no store or provider access; an assistant reply is streamed through
Textual's MarkdownStream and updated once in full when it ends, so code blocks
render right; at most `MAX_MOUNTED` entries stay mounted, older ones come back
on demand.
"""

from __future__ import annotations

import json
from typing import Any

from rich.markup import escape
from textual.app import ComposeResult
from textual.containers import Vertical, VerticalScroll
from textual.widgets import Button, Collapsible, Markdown, Static
from textual.widgets.markdown import MarkdownStream

MAX_MOUNTED = 300  # entries kept mounted; older ones are unmounted and can be shown again
SHOW_MORE = 100
MAX_OUTPUT_CHARS = 4000  # of a tool output shown in its block (the model saw its own cut)
MAX_OUTPUT_LINES = 60


def clip_output(text: str) -> str:
    lines = text.splitlines()
    clipped = False
    if len(lines) > MAX_OUTPUT_LINES:
        lines = lines[:MAX_OUTPUT_LINES]
        clipped = True
    out = "\n".join(lines)
    if len(out) > MAX_OUTPUT_CHARS:
        out = out[:MAX_OUTPUT_CHARS]
        clipped = True
    if clipped:
        out += f"\n… ({len(text.splitlines())} lines, {len(text):,} characters in all)"
    return out


class UserEntry(Static):
    DEFAULT_CSS = """
    UserEntry { margin: 1 0 0 0; padding: 0 1; border-left: outer $accent; color: $text; }
    """

    def __init__(self, text: str) -> None:
        super().__init__(escape(text))
        self.text = text


class AssistantEntry(Vertical):
    DEFAULT_CSS = """
    AssistantEntry { height: auto; margin: 1 0 0 0; padding: 0 1; }
    AssistantEntry Markdown { margin: 0; padding: 0; }
    AssistantEntry .partial { color: $warning; }
    """

    def __init__(self, text: str = "", *, partial: str = "") -> None:
        super().__init__()
        self.text = text
        self.partial = partial
        self._stream: MarkdownStream | None = None

    def compose(self) -> ComposeResult:
        yield Markdown(self.text)
        if self.partial:
            yield Static(f"(reply cut short: {escape(self.partial)})", classes="partial")

    @property
    def markdown(self) -> Markdown:
        return self.query_one(Markdown)

    async def append(self, chunk: str) -> None:
        if self._stream is None:
            self._stream = Markdown.get_stream(self.markdown)
        self.text += chunk
        await self._stream.write(chunk)

    async def finish(self, full_text: str | None = None, *, partial: str = "") -> None:
        """Stop streaming and render the whole reply once (so fences and tables come out right)."""
        if self._stream is not None:
            await self._stream.stop()
            self._stream = None
        if full_text is not None:
            self.text = full_text
        await self.markdown.update(self.text)
        if partial and not self.partial:
            self.partial = partial
            await self.mount(Static(f"(reply cut short: {escape(partial)})", classes="partial"))


def _arguments_text(arguments: dict[str, Any]) -> str:
    if set(arguments) == {"command"}:
        return f"$ {arguments['command']}"
    return json.dumps(arguments, indent=2, ensure_ascii=False)


class ToolEntry(Collapsible):
    DEFAULT_CSS = """
    ToolEntry { margin: 1 0 0 0; padding: 0; border: none; background: $boost; }
    ToolEntry.failed CollapsibleTitle { color: $error; }
    ToolEntry .arguments { color: $text-muted; }
    ToolEntry .output { margin: 1 0 0 0; }
    """

    def __init__(
        self,
        name: str,
        subject: str,
        arguments: dict[str, Any],
        *,
        status: str = "running…",
        output: str = "",
        failed: bool = False,
    ) -> None:
        self.tool_name = name
        self.subject = " ".join(subject.split())[:100]
        self.arguments = arguments
        self.status = status
        self.output = output
        super().__init__(
            Static(escape(_arguments_text(arguments)), classes="arguments"),
            Static(escape(clip_output(output)), classes="output"),
            title=self._title_text(),
            collapsed=True,
            classes="failed" if failed else "",
        )

    def _title_text(self) -> str:
        return f"⏺ {self.tool_name} {self.subject} · {self.status}"

    def finish(self, status: str, output: str, *, failed: bool = False) -> None:
        self.status = status or "done"
        self.output = output
        self.title = self._title_text()
        self.query_one(".output", Static).update(escape(clip_output(output)))
        self.set_class(failed, "failed")


class Divider(Static):
    DEFAULT_CSS = """
    Divider { margin: 1 0 0 0; color: $text-muted; text-align: center; width: 100%; }
    """

    def __init__(self, text: str) -> None:
        super().__init__(f"── {escape(text)} ──")
        self.text = text


class Notice(Static):
    """A warning or an error, inline in the transcript."""

    DEFAULT_CSS = """
    Notice { margin: 1 0 0 0; padding: 0 1; }
    Notice.warning { color: $warning; }
    Notice.error { color: $error; border-left: outer $error; }
    Notice.info { color: $text-muted; }
    """

    def __init__(self, text: str, kind: str = "warning") -> None:
        super().__init__(escape(text), classes=kind)
        self.text = text
        self.kind = kind


class Transcript(VerticalScroll):
    """The scrolling list of entries; stays pinned to the bottom unless the user scrolled up."""

    DEFAULT_CSS = """
    Transcript { height: 1fr; padding: 0 1; scrollbar-size-vertical: 1; }
    Transcript #earlier { width: 100%; margin: 1 0 0 0; }
    """

    def __init__(self, **kwargs) -> None:
        super().__init__(**kwargs)
        self.unmounted: list[Any] = []  # entries pruned from the top, oldest first

    def on_mount(self) -> None:
        self.anchor()

    async def add(self, *entries: Any) -> None:
        await self.mount_all(entries)
        await self._prune()

    def entries(self) -> list[Any]:
        return [child for child in self.children if child.id != "earlier"]

    async def _prune(self) -> None:
        entries = self.entries()
        excess = len(entries) - MAX_MOUNTED
        if excess <= 0:
            return
        old = entries[:excess]
        self.unmounted.extend(_replica(e) for e in old)
        await self.remove_children(old)
        await self._update_earlier_button()

    async def _update_earlier_button(self) -> None:
        button = self.query("#earlier")
        if self.unmounted and not button:
            await self.mount(Button(f"show earlier ({len(self.unmounted)} hidden)", id="earlier"), before=0)
        elif self.unmounted:
            button.first(Button).label = f"show earlier ({len(self.unmounted)} hidden)"
        elif button:
            await button.remove()

    async def on_button_pressed(self, event: Button.Pressed) -> None:
        if event.button.id != "earlier":
            return
        event.stop()
        batch, self.unmounted = self.unmounted[-SHOW_MORE:], self.unmounted[:-SHOW_MORE]
        await self.mount_all(batch, after=self.query_one("#earlier"))
        await self._update_earlier_button()


def _replica(entry: Any) -> Any:
    """A fresh, unmounted copy of an entry (a widget cannot be mounted twice)."""
    if isinstance(entry, UserEntry):
        return UserEntry(entry.text)
    if isinstance(entry, AssistantEntry):
        return AssistantEntry(entry.text, partial=entry.partial)
    if isinstance(entry, Divider):
        return Divider(entry.text)
    if isinstance(entry, Notice):
        return Notice(entry.text, entry.kind)
    if isinstance(entry, ToolEntry):
        return ToolEntry(
            entry.tool_name, entry.subject, entry.arguments,
            status=entry.status, output=entry.output, failed=entry.has_class("failed"),
        )
    return Static(str(entry))
