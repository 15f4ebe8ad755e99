"""The transcript: user turns, streamed Markdown replies, collapsible tool calls, dividers, notices.

Invariant: entries only render what they are given (events, or the session's
transcript items through `entries_for`) — no store or provider access; an
assistant reply is streamed through Textual's MarkdownStream and updated once
in full when it ends, so code blocks render right; at most `MAX_MOUNTED` entries stay mounted, older ones come back
on demand. Layout cost grows with the number of widgets, so long replies are
sealed in Rich-rendered blocks as they stream, and replies older than the
newest `FRESH_ENTRIES` are frozen into one Rich-rendered block each.
"""

from __future__ import annotations

import asyncio
import json
import time
from typing import Any

from rich.markdown import Markdown as RichMarkdown
from rich.markup import escape
from textual.app import ComposeResult
from textual.containers import Vertical, VerticalScroll
from textual.widgets import Button, Collapsible, Markdown, Static
from textual.timer import Timer
from textual.widgets.markdown import MarkdownStream
from ...context.attachments import AttachedFile, attached_line, split_attachments

FLUSH_SECS = 0.2  # streamed text reaches the Markdown widget at most 5 times a second
SEGMENT_CHARS = 1500  # a streaming reply is sealed into one Rich-rendered block about this often
MAX_MOUNTED = 150  # entries kept mounted; older ones are unmounted and can be shown again
FRESH_ENTRIES = 20  # the newest entries keep Textual's Markdown widgets; older replies are frozen
SHOW_MORE = 50
MAX_OUTPUT_CHARS = 4000  # of a tool output shown in its block (the model saw its own cut)
MAX_OUTPUT_LINES = 60


def literal(text: str) -> str:
    """`text` as Textual markup that shows it as it is: every `[` escaped, so no tag, variable or action in it
    is read as markup (rich's `escape` leaves some that Textual's parser reads, and fails on: `[/$x`, `[a=@b`)."""
    return text.replace("[", "\\[")


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

    def __init__(self, text: str, attached: list[AttachedFile] | None = None) -> None:
        """`text` as stored: attached files (blocks before the typed text) are shown as one line naming them;
        or the typed text, and the files that go with it (`attached`)."""
        attached, typed = (attached, text) if attached is not None else split_attachments(text)
        super().__init__(escape(typed) if not attached else f"[dim]{escape(attached_line(attached))}[/dim]\n{escape(typed)}")
        self.text = text
        self.typed = typed
        self.attached = attached


def seal_point(text: str) -> int:
    """Index just after the last blank line outside a code fence (0: no safe place to cut)."""
    in_fence = False
    last = 0
    position = 0
    for line in text.splitlines(keepends=True):
        position += len(line)
        stripped = line.strip()
        if stripped.startswith(("```", "~~~")):
            in_fence = not in_fence
        elif not in_fence and not stripped and line.endswith("\n"):
            last = position
    return last


class AssistantEntry(Vertical):
    """A reply. While it streams, the live tail is a Textual Markdown fed through MarkdownStream;
    every ~`SEGMENT_CHARS` the tail is sealed, at a paragraph break outside code, into one
    Rich-rendered block, so a very long reply stays a handful of widgets instead of hundreds."""

    DEFAULT_CSS = """
    AssistantEntry { height: auto; margin: 1 0 0 0; padding: 0 1; }
    AssistantEntry Markdown { margin: 0; padding: 0; }
    AssistantEntry .sealed { margin: 0 0 1 0; }
    AssistantEntry .partial { color: $warning; }
    """

    def __init__(self, text: str = "", *, partial: str = "", frozen: bool = False) -> None:
        super().__init__()
        self.text = text
        self.partial = partial
        self.finished = bool(text) or frozen  # False while it streams
        self.frozen = frozen
        self.sealed: list[str] = []  # text rendered in sealed blocks, in order
        self._stream: MarkdownStream | None = None
        self._unrendered = ""  # streamed text not yet handed to the Markdown widget
        self._live = ""  # text in the live Markdown widget
        self._flushed_at = 0.0
        self._flush_timer: Timer | None = None
        self._rendering = asyncio.Lock()  # a timer's flush and finish() never interleave

    def compose(self) -> ComposeResult:
        if self.frozen:
            self.sealed = [self.text]
            yield self._block(self.text)
        elif len(self.text) > SEGMENT_CHARS:
            self.sealed = [self.text]
            yield self._block(self.text)
            yield Markdown("")
        else:
            self._live = self.text
            yield Markdown(self.text)
        if self.partial:
            yield Static(f"(reply cut short: {escape(self.partial)})", classes="partial")

    @staticmethod
    def _block(text: str) -> Static:
        """Sealed or frozen text: one Rich-rendered widget."""
        return Static(RichMarkdown(text), classes="sealed")

    @property
    def markdown(self) -> Markdown:
        """The live Markdown widget (the tail of the reply)."""
        return self.query_one(Markdown)

    @property
    def rendered_chars(self) -> int:
        live = self.query(Markdown)
        return sum(len(part) for part in self.sealed) + (len(live.first().source) if live else 0)

    async def freeze(self) -> None:
        """Render the finished reply as one Rich block (a handful of widgets fewer to lay out)."""
        if self.frozen or not self.finished:
            return
        self.frozen = True
        await self.query(".sealed").remove()
        await self.query(Markdown).remove()
        self.sealed = [self.text]
        await self.mount(self._block(self.text), before=0)

    async def append(self, chunk: str) -> None:
        """Add streamed text; it is rendered at most every `FLUSH_SECS`, in one piece."""
        self.text += chunk
        self._unrendered += chunk
        now = time.monotonic()
        if now - self._flushed_at >= FLUSH_SECS:
            await self._flush()
        elif self._flush_timer is None:
            self._flush_timer = self.set_timer(FLUSH_SECS, self._flush)

    async def _flush(self) -> None:
        if self._flush_timer is not None:
            self._flush_timer.stop()
            self._flush_timer = None
        self._flushed_at = time.monotonic()
        async with self._rendering:
            await self._render_pending()

    async def _render_pending(self) -> None:
        if not self._unrendered:
            return
        text, self._unrendered = self._unrendered, ""
        combined = self._live + text
        cut = seal_point(combined) if len(combined) > SEGMENT_CHARS else 0
        if cut > len(self._live):
            await self._write(combined[len(self._live) : cut])
            await self._seal()
            text = combined[cut:]
        await self._write(text)

    async def _write(self, text: str) -> None:
        if not text:
            return
        if self._stream is None:
            self._stream = Markdown.get_stream(self.markdown)
        self._live += text
        await self._stream.write(text)

    async def _stop_stream(self) -> None:
        if self._stream is not None:
            await self._stream.stop()
            self._stream = None

    async def _seal(self) -> None:
        """Turn the live tail into one Rich-rendered block and start an empty live tail."""
        await self._stop_stream()
        self.sealed.append(self._live)
        await self.mount(self._block(self._live), before=self.markdown)
        self._live = ""
        await self.markdown.update("")

    async def finish(self, full_text: str | None = None, *, partial: str = "") -> None:
        """Stop streaming and render the live tail once in full (so fences and tables come out right)."""
        if self._flush_timer is not None:
            self._flush_timer.stop()
            self._flush_timer = None
        async with self._rendering:
            await self._finish(full_text)
        self.finished = True
        if partial and not self.partial:
            self.partial = partial
            await self.mount(Static(f"(reply cut short: {escape(partial)})", classes="partial"))

    async def _finish(self, full_text: str | None) -> None:
        await self._stop_stream()
        if full_text is not None and full_text != self.text:
            self.text = full_text
            await self.query(".sealed").remove()
            self.sealed = []
        done = sum(len(part) for part in self.sealed)
        self._unrendered = ""
        rest = self.text[done:]
        # What came faster than it was rendered (a fast stream, a busy machine) is sealed as streaming seals it.
        cut = seal_point(rest) if len(rest) > SEGMENT_CHARS else 0
        if cut:
            self._live = rest[:cut]
            await self._seal()
            rest = rest[cut:]
        self._live = rest
        await self.markdown.update(self._live)


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
        self.finished = status != "running…"  # its result is in (a block of the stored transcript is)
        super().__init__(
            Static(literal(_arguments_text(arguments)), classes="arguments"),
            Static(literal(clip_output(output)), classes="output"),
            title=self._title_text(),
            collapsed=True,
            classes="failed" if failed else "",
        )

    def _title_text(self) -> str:
        return literal(f"⏺ {self.tool_name} {self.subject} · {self.status}")  # the model's words, never markup

    def progressed(self, text: str) -> None:
        """What the running tool reported (`render.progress_text`), in place of "running…" (a report after its
        result is dropped)."""
        if self.finished:
            return
        self.status = text
        self.title = self._title_text()

    def finish(self, status: str, output: str, *, failed: bool = False) -> None:
        self.status = status or "done"
        self.output = output
        self.finished = True
        self.title = self._title_text()
        self.query_one(".output", Static).update(literal(clip_output(output)))
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
        super().__init__(literal(text), classes=kind)
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
        for entry in entries[: max(0, len(entries) - FRESH_ENTRIES)]:
            if isinstance(entry, AssistantEntry) and entry.finished:
                entry.frozen = True  # composed frozen: never built as Markdown widgets
        await self.mount_all(entries)
        await self._freeze_old()
        await self._prune()

    async def _freeze_old(self) -> None:
        for entry in self.entries()[:-FRESH_ENTRIES]:
            if isinstance(entry, AssistantEntry) and not entry.frozen:
                await entry.freeze()

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
    if not isinstance(entry, Static) and callable(getattr(entry, "replica", None)):  # a sub-agent's block
        return entry.replica()
    if isinstance(entry, UserEntry):
        return UserEntry(entry.typed, entry.attached)
    if isinstance(entry, AssistantEntry):
        return AssistantEntry(entry.text, partial=entry.partial, frozen=True)
    if isinstance(entry, Divider):
        return Divider(entry.text)
    if isinstance(entry, Notice):
        return Notice(entry.text, entry.kind)
    if isinstance(entry, ToolEntry):
        return ToolEntry(
            entry.tool_name, entry.subject, entry.arguments,
            status=entry.status, output=entry.output, failed=entry.has_class("failed"),
        )
    if isinstance(entry, Markdown):  # /skills, /memory, /mcp and the like
        return type(entry)(entry.source)
    if isinstance(entry, Static) and hasattr(entry, "replica"):  # /help
        return entry.replica()
    return Static(str(entry))


def entries_for(item) -> list[object]:
    """The widgets for one transcript item of the session: its entry, and a notice under a length-cut reply or
    a prompt no reply answered."""
    from ..render import length_cut_notice

    entry = entry_for(item)
    if item.kind == "user" and item.unanswered:
        return [entry, Notice(f"unanswered, not sent again: {item.unanswered}", "warning")]
    if item.kind == "assistant" and item.cut and not item.partial:
        return [entry, Notice(item.notice or length_cut_notice(0), "warning")]
    return [] if entry is None else [entry]


def entry_for(item) -> object | None:
    """The widget for one transcript item of the session."""
    from ...features import declared_tools
    from ...tools.registry import tool_subject

    kind = item.kind
    if kind == "user":
        return UserEntry(item.text)
    if kind == "assistant":
        return AssistantEntry(item.text, partial=(item.error or "interrupted") if item.partial else "")
    if kind == "tool":
        failed = bool(item.is_error)
        if item.result is None:
            status = "no result"
        elif item.decision in ("denied", "blocked", "invalid"):
            status = f"{item.decision}: {item.summary}"
        else:
            status = item.summary or item.decision or ("error" if failed else "done")
        return ToolEntry(
            item.name, tool_subject(item.name, item.arguments, declared_tools()), item.arguments,
            status=status, output=item.result or "", failed=failed,
        )
    if kind == "divider":
        return Divider(item.text)
    return None
