"""The Textual app: a chat transcript, a prompt box, a live status line and slash commands.

Invariant: the app renders agent events and calls the `ChatSession`; it never
talks to a provider or to SQLite itself. One turn (or compaction) runs at a
time, in a worker that Esc or Ctrl+C cancels; the partial reply stays, and a
provider error is shown inline — the app does not crash on it. The user is
asked one question at a time (`asking`): a tool approval or an MCP server's form.

Given an `opener` instead of an open session, the app draws its first frame
first and opens the session after it, in a worker: what is submitted meanwhile
waits (see `startup.py`) and a failure to open is one error line. Modules the
first frame does not need (the agent's events, the screens, the tool registry)
are imported where they are used.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import TYPE_CHECKING, ClassVar

from rich.markup import escape
from textual.app import App, ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal
from textual.widgets import Markdown, Static
from textual.worker import Worker

from ...context.attachments import AttachedFile, attached_line
from ...errors import ReplyNotStored, ZephError
from ...features import chat_commands, chat_handler
from ...log import current_log_path, get_logger
from .prompt_input import PromptInput
from .help_panel import HelpPanel
from .path_complete import complete_path
from .mention_complete import mention_completions
from .slash import SlashCommand, SlashError, complete, parse, unescape
from .startup import Startup
from .status_bar import StatusBar
from .task_list import TaskList
from .transcript import Divider, Notice, Transcript, UserEntry, entries_for, literal

log = get_logger("chat")

if TYPE_CHECKING:
    from ...agent.chat_session import ChatSession
    from ...context.report import ContextReport
    from ...tools.elicitation import ElicitationAnswer, ElicitationRequest
    from ...tools.permissions import ApprovalDecision, ApprovalRequest
    from .elicit_screen import ElicitScreen

QUIT_WINDOW_SECS = 2.0  # a second Ctrl+C within this many seconds quits


class TuiApprover:
    """Asks for write and exec tools in a dialog: yes, no, or always (this tool, this session)."""

    def __init__(self) -> None:
        self.app: "ZephApp | None" = None

    async def __call__(self, request: "ApprovalRequest") -> "ApprovalDecision":
        from ...tools.permissions import ApprovalDecision
        from .screens import ConfirmScreen

        if self.app is None:
            return ApprovalDecision("no", "no one is present to approve it")
        async with self.app.asking:
            answer = await self.app.push_screen_wait(ConfirmScreen(request))
        if answer in ("yes", "always"):
            return ApprovalDecision("always" if answer == "always" else "yes")
        return ApprovalDecision("no", "the user answered no")


class TuiElicitor:
    """Asks the user for a server's form (MCP elicitation) in a dialog: accept with the values, decline, or
    cancel. It is called from the server's connection, not from the turn's worker: the dialog is awaited
    through its callback, and taken down (as cancel) when the server stops waiting for it."""

    def __init__(self) -> None:
        self.app: "ZephApp | None" = None

    async def __call__(self, request: "ElicitationRequest") -> "ElicitationAnswer":
        from ...tools.elicitation import ElicitationAnswer
        from .elicit_screen import ElicitScreen

        app = self.app
        if app is None:
            return ElicitationAnswer("decline")
        async with app.asking:  # one dialog at a time, approvals included
            answered: asyncio.Future[ElicitationAnswer] = asyncio.get_running_loop().create_future()

            def done(answer: ElicitationAnswer | None) -> None:
                if not answered.done():
                    answered.set_result(answer or ElicitationAnswer("cancel"))

            screen = ElicitScreen(request)
            # Through the app's own queue: the connection's task may run outside the app's context.
            app.call_later(app.push_screen, screen, done)
            try:
                return await answered
            except asyncio.CancelledError:
                app.call_later(app.take_down_form, screen)
                raise


class HelpEntry(Markdown):
    DEFAULT_CSS = "HelpEntry { margin: 1 0 0 0; padding: 0 1; background: $boost; }"


class ZephApp(App[int]):
    TITLE = "zeph"
    CSS = """
    Screen { layout: vertical; }
    #header { height: 1; padding: 0 1; background: $primary-background; color: $text; }
    #completions { height: auto; max-height: 8; padding: 0 2; color: $text-muted; display: none; }
    #completions.shown { display: block; }
    #body { height: 1fr; }
    """
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape", "cancel_turn", "cancel", show=False),
        Binding("ctrl+c", "interrupt", "cancel / quit", show=False, priority=True),
        Binding("ctrl+q", "quit", "quit", show=False, priority=True),
        Binding("f1", "help", "help", show=False),
        Binding("ctrl+t", "toggle_tasks", "task list", show=False, priority=True),
    ]

    def __init__(self, session: "ChatSession | None" = None, *,
                 opener: "Callable[[], Awaitable[ChatSession]] | None" = None, header: str = "") -> None:
        """Either an open `session`, or an `opener` that opens one after the first frame (with `header`,
        markup, shown until it is open)."""
        super().__init__()
        if (session is None) == (opener is None):
            raise ValueError("give the app either an open session or an opener")
        self.session: "ChatSession" = session  # type: ignore[assignment]  # set before any use when opened late
        self.opener = opener
        self.startup = Startup("ready" if session is not None else "starting")
        self.start_exception: BaseException | None = None  # why the session could not open
        self.starting_header = header
        self._waiting_entry: Static | None = None  # the transcript line of a message waiting for the session
        self.worker: Worker | None = None
        self.turn_reports: list["ContextReport"] = []  # the context after each of the last two turns
        self._last_interrupt = 0.0
        self.asking = asyncio.Lock()  # one question to the user at a time: an approval or a server's form

    # ---- layout -----------------------------------------------------------------------------

    def compose(self) -> ComposeResult:
        yield Static(id="header")
        with Horizontal(id="body"):
            yield Transcript(id="transcript")
            yield TaskList(id="checklist")
        yield Static(id="completions")
        yield PromptInput(id="prompt")
        yield StatusBar(id="status")

    @property
    def transcript(self) -> Transcript:
        return self.query_one(Transcript)

    @property
    def status(self) -> StatusBar:
        return self.query_one(StatusBar)

    @property
    def prompt(self) -> PromptInput:
        return self.query_one(PromptInput)

    async def on_mount(self) -> None:
        if self.startup.ready:
            await self.show_session()
            self.prompt.focus()
            return
        self.query_one("#header", Static).update(self.starting_header)
        self.status.show_note(self.startup.status_line())
        self.prompt.focus()
        self.call_after_refresh(self.start_opening)  # after the first frame is drawn

    def start_opening(self) -> None:
        self.run_worker(self.open_session(), group="start", exit_on_error=False)

    async def open_session(self) -> None:
        """Open the session (the heavy imports, the store, the agent) while the app is already on screen."""
        assert self.opener is not None
        try:
            self.session = await self.opener()
        except asyncio.CancelledError:
            raise
        except Exception as exc:
            if not isinstance(exc, ZephError):
                log.error("the session could not open", exc_info=exc)
            self.start_exception = exc
            await self.notice(self.startup.failed(exc, current_log_path()), "error")
            self.status.show_note(self.startup.status_line())
            waiting = self.startup.take()
            if waiting is not None:  # back in the box, above anything typed since
                self.restore_input("\n".join(filter(None, [waiting, self.prompt.text])))
            return
        # A waiting message's turn measures the context anyway: the gauge waits for it rather than delay it.
        await self.show_session(gauge=self.startup.waiting is None)
        self.startup.phase = "ready"
        self.status.show_note("")
        waiting = self.startup.take()
        if waiting is not None:
            await self.submit(waiting)
            if not self.busy and self.status.report is None:
                self.refresh_gauge()

    async def show_session(self, *, gauge: bool = True) -> None:
        self.update_header()
        await self.load_transcript()
        for warning in self.session.warnings:
            await self.notice(warning, "warning")
        if gauge:
            self.refresh_gauge()

    def update_header(self) -> None:
        h = self.session.header()
        title = f" · {h.title}" if h.title else " · new session"
        self.query_one("#header", Static).update(
            f"[b]zeph[/b] · {escape(h.provider)} · {escape(h.model)} · mode {escape(h.mode)}{escape(title)}"
        )

    async def load_transcript(self) -> None:
        transcript = self.transcript
        await transcript.remove_children()
        transcript.unmounted.clear()
        entries = [entry for item in self.session.transcript() for entry in entries_for(item)]
        await transcript.add(*entries)
        transcript.scroll_end(animate=False)
        self.refresh_tasks()

    def refresh_tasks(self) -> None:
        """The task list beside the transcript, as the session has it now."""
        self.query_one(TaskList).show(self.session.task_items())

    async def action_toggle_tasks(self) -> None:
        await self.toggle_tasks()

    async def toggle_tasks(self) -> None:
        """Fold or unfold the task list (Ctrl+T, /tasks)."""
        panel = self.query_one(TaskList)
        unfolded = panel.toggle()
        if not panel.items:
            await self.notice("no task list in this session yet: the model keeps one for multi-step work"
                              + ("" if unfolded else " (it will stay folded away)"))

    def refresh_gauge(self) -> "ContextReport":
        """The context as the next turn would send it, shown in the gauge."""
        report = self.session.context_report()
        self.status.condition = "no tools" if self.session.agent.tools_unavailable else ""  # `zeph context` says why
        self.status.show_report(report)
        return report

    async def notice(self, text: str, kind: str = "info") -> None:
        await self.transcript.add(Notice(text, kind))

    # ---- input ------------------------------------------------------------------------------

    def on_key(self, event) -> None:
        """Typing anywhere on the main screen goes to the prompt box."""
        if self.screen is self.screen_stack[0] and self.focused is not self.prompt and event.is_printable:
            self.prompt.focus()
            self.prompt.insert(event.character or "")
            event.stop()

    def completions(self, text: str) -> list:
        """What Tab offers for the input: command names and values, the paths after /attach, or an @server:uri."""
        return (complete(text) or complete_path(text, self.session.cwd if self.session is not None else Path.cwd())
                or mention_completions(self, text))

    def on_prompt_input_edited(self, event: PromptInput.Edited) -> None:
        hints = self.completions(event.text)
        box = self.query_one("#completions", Static)
        if hints:
            box.update("\n".join(f"{literal(h.label)} {literal(h.hint)}  [dim]{literal(h.help)}[/dim]" for h in hints[:8]))
        box.set_class(bool(hints), "shown")

    def on_prompt_input_page_transcript(self, event: PromptInput.PageTranscript) -> None:
        if event.pages < 0:
            self.transcript.scroll_page_up(animate=False)
        else:
            self.transcript.scroll_page_down(animate=False)

    def on_prompt_input_complete(self, event: PromptInput.Complete) -> None:
        hints = self.completions(self.prompt.text)
        if hints:
            self.prompt.text = hints[0].value
            self.prompt.move_cursor(self.prompt.document.end)

    async def on_prompt_input_submitted(self, event: PromptInput.Submitted) -> None:
        self.query_one("#completions", Static).set_class(False, "shown")
        if self.startup.ready:
            await self.submit(event.text)
        else:
            await self.submit_while_starting(event.text)

    async def submit(self, text: str) -> None:
        command = parse(text)
        if command is None:
            await self.start_turn(unescape(text))
        elif isinstance(command, SlashError):
            await self.notice(command.message, "error")
            self.restore_input(text)
        else:
            await self.run_command(command, text)

    async def submit_while_starting(self, text: str) -> None:
        """Before the session is open: /help and /exit at once, anything else waits for it (one at a time)."""
        command = parse(text)
        if isinstance(command, SlashError):
            await self.notice(command.message, "error")
            self.restore_input(text)
        elif isinstance(command, SlashCommand) and command.name in ("help", "exit", "quit"):
            await self.run_command(command, text)
        elif self.startup.phase == "failed":
            await self.notice(f"{self.startup.error} (ctrl+q quits)", "error")
            self.restore_input(text)
        elif not self.startup.hold(text):
            await self.notice("one message already waits for zeph to start: this one stays in the box", "warning")
            self.restore_input(text)
        else:
            self._waiting_entry = UserEntry(unescape(text)) if command is None else Notice(
                f"{text.strip()} runs once zeph has started (esc takes it back)", "info")
            await self.transcript.add(self._waiting_entry)
            self.status.show_note(self.startup.status_line())

    def restore_input(self, text: str) -> None:
        """Give the text back to the prompt box, so nothing typed is lost."""
        self.prompt.text = text
        self.prompt.move_cursor(self.prompt.document.end)

    @property
    def busy(self) -> bool:
        return self.worker is not None and self.worker.is_running

    async def start_turn(self, text: str) -> None:
        if self.busy:
            await self.notice("a turn is still running: esc cancels it", "warning")
            self.restore_input(text)
            return
        staged = [AttachedFile(a.path, a.lines) for a in self.session.staged.values()]
        await self.transcript.add(UserEntry(text, staged))
        self.transcript.scroll_end(animate=False)
        self.worker = self.run_worker(self.run_turn(text), group="turn", exclusive=True, exit_on_error=False)

    # ---- one turn ---------------------------------------------------------------------------

    async def run_turn(self, text: str) -> None:
        from ...agent.events import ToolCallFinished, TurnStarted
        from ..event_handler import dispatch
        from ...paths import data_dir
        from ..prompt_keeper import rescue_reply
        from .turn_view import TurnView, failure_text

        status = self.status
        view = TurnView(self, self.session.reply_limit())
        status.set_streaming(True)
        stored = False
        try:
            async with contextlib.aclosing(self.session.run(text)) as events:  # closed before any handler below
                async for event in events:
                    stored = stored or isinstance(event, TurnStarted)
                    await dispatch(event, view)
                    if isinstance(event, ToolCallFinished):
                        self.refresh_tasks()  # the checklist follows the model's list (todo_write) as it changes
        except asyncio.CancelledError:
            await view.cancelled()
            self.take_down_forms()
            if not stored:  # it was waiting for another turn on the session: back into the box to send again
                await self.notice("cancelled before it was sent: your message is back in the input box", "warning")
                self.restore_input(text)
            elif self.session.agent.unanswered_prompt is not None:  # no reply yet: withdrawn, not sent again
                await self.notice("cancelled before any reply: your message is back in the input box "
                                  "(the session keeps it, marked unanswered)", "warning")
                self.restore_input(text)
            else:
                await self.notice("cancelled: what was received is kept", "warning")
            raise
        except ReplyNotStored as exc:  # shown in the transcript, not in the database: kept in a file
            await view.end_reply_block(partial="not stored")
            await self.notice(f"{exc}\n{rescue_reply(exc.text, data_dir(self.session.env))}", "error")
        except ZephError as exc:
            await self.notice(failure_text(exc), "error")
            if not stored:  # it never reached the database (locked, say): give it back to resend
                self.restore_input(text)
        except Exception as exc:  # a bug: shown inline with its traceback in the log, the app stays up
            log.error("internal error during a turn", exc_info=exc)
            where = current_log_path()
            await self.notice(f"internal error: {type(exc).__name__}: {exc}"
                              + (f" (traceback in {where})" if where else ""), "error")
        finally:
            status.set_streaming(False)
            status.show_badge("")
            self.show_staged()  # sent with the prompt, or still waiting when it was not
        self.refresh_tasks()
        self.turn_reports = [*self.turn_reports[-1:], self.refresh_gauge()]

    def take_down_forms(self) -> None:
        """A cancelled turn's servers' forms (its tool calls were cancelled): answered cancel, their dialogs closed."""
        from .elicit_screen import ElicitScreen

        for screen in reversed(self.screen_stack):
            if isinstance(screen, ElicitScreen):
                self.take_down_form(screen)

    def take_down_form(self, screen: "ElicitScreen") -> None:
        """A server's form no one waits for any more: answered cancel and closed, if it is still open."""
        from ...tools.elicitation import ElicitationAnswer

        if screen.is_active:
            screen.dismiss(ElicitationAnswer("cancel"))

    async def action_help(self) -> None:
        """The commands and keys, their top in view (the transcript leaves the bottom for it)."""
        panel = HelpPanel()
        await self.transcript.add(panel)
        self.call_after_refresh(self.transcript.scroll_to_widget, panel, top=True, animate=False)

    # ---- cancel and quit --------------------------------------------------------------------

    async def action_cancel_turn(self) -> None:
        if self.busy and self.worker is not None:
            self.worker.cancel()
        elif self.startup.phase == "starting" and self.startup.waiting is not None:
            waiting = self.startup.take()  # not sent yet: back into the box to edit
            if self._waiting_entry is not None:
                await self._waiting_entry.remove()
                self._waiting_entry = None
            self.restore_input("\n".join(filter(None, [waiting, self.prompt.text])))
            self.status.show_note(self.startup.status_line())

    def action_interrupt(self) -> None:
        """Ctrl+C: copy a selection if there is one, else cancel the turn, else (twice) quit."""
        selected = self.screen.get_selected_text() or (self.prompt.selected_text if self.prompt.has_focus else "")
        if selected:
            self.copy_to_clipboard(selected)
            self.screen.clear_selection()
            self.notify(f"copied {len(selected):,} characters", timeout=2)
            return
        if self.busy and self.worker is not None:
            self.worker.cancel()
            self._last_interrupt = time.monotonic()
            return
        if time.monotonic() - self._last_interrupt < QUIT_WINDOW_SECS:
            self.exit(0)
            return
        self._last_interrupt = time.monotonic()
        self.notify("press ctrl+c again to quit (or ctrl+q)", timeout=QUIT_WINDOW_SECS)

    # ---- slash commands ---------------------------------------------------------------------

    async def run_command(self, command: SlashCommand, typed: str) -> None:
        name, argument = command.name, command.argument
        if name in ("exit", "quit"):
            self.exit(0)
            return
        if name == "help":
            await self.action_help()
            return
        if name == "context":
            await (self.show_context_text() if argument == "text" else self.show_context())
            return
        if name == "sessions":
            self.run_worker(self.pick_session(argument), group="dialog")
            return
        feature_command = chat_commands().get(name)
        if feature_command is not None and feature_command.background:  # it may wait (on servers): the app stays usable
            self.run_worker(self.in_background(name, argument, typed), group=name, exit_on_error=False)
            return
        if self.busy and name in ("compact", "clear", "new", "model", "provider"):
            await self.notice(f"/{name} waits until the running turn ends (esc cancels it)", "warning")
            self.restore_input(typed)
            return
        try:
            await self.apply_command(name, argument)
        except ZephError as exc:
            await self.notice(str(exc), "error")
            self.restore_input(typed)

    async def apply_command(self, name: str, argument: str) -> None:
        session = self.session
        if name == "compact":
            if session.conversation is None:
                await self.notice("nothing to compact: the session has no messages yet")
                return
            self.worker = self.run_worker(self.compact(), group="turn", exclusive=True, exit_on_error=False)
        elif name == "clear":
            hidden = session.clear()
            await self.transcript.add(Divider(f"context cleared: the model no longer sees the {hidden} messages above"))
            self.refresh_gauge()
        elif name == "new":
            session.new()
            self.turn_reports = []
            await self.load_transcript()
            self.update_header()
            self.refresh_gauge()
            await self.notice("new session: it starts with your next message")
        elif name == "model":
            for warning in await session.set_model(argument):
                await self.notice(warning, "warning")
            self.update_header()
            self.refresh_gauge()
            await self.notice(f"model: {session.header().model}")
        elif name == "provider":
            for warning in await session.set_provider(argument):
                await self.notice(warning, "warning")
            self.update_header()
            self.refresh_gauge()
            await self.notice(f"provider: {session.header().provider} · model {session.header().model}")
        elif name == "mode":
            session.set_mode(argument)
            self.update_header()
            self.refresh_gauge()
            await self.notice(f"mode: {argument}")
        elif name == "system":
            session.set_system(argument)
            await self.notice(f"topic prompt: {argument}" if argument else "topic prompt cleared")
            self.refresh_gauge()
        elif name == "enhance":
            session.set_enhancement(argument)
            await self.notice(f"enhancement prompt: {argument}" if argument else "enhancement prompt: the configured one")
            self.refresh_gauge()
        elif name == "export":
            path = session.export(Path(argument) if argument else None)
            await self.notice(f"exported to {path}")
        elif name == "attach":
            await self.attach(argument)
        elif name in chat_commands():
            await chat_handler(chat_commands()[name])(self, argument)

    async def attach(self, argument: str) -> None:
        """/attach FILE stages a file for the next message, /attach lists the staged ones, /attach clear drops them."""
        session = self.session
        if argument.lower() == "clear" and not (session.cwd / argument).exists():
            dropped = session.unstage()
            await self.notice(f"dropped {', '.join(a.path for a in dropped)}" if dropped else "no file was attached")
        elif argument:
            attachment = session.stage(argument)  # AttachmentError: shown, and the command back in the box
            await self.notice(f"attached {attachment.path} ({attachment.lines:,} line{'' if attachment.lines == 1 else 's'}, {attachment.tokens:,} tokens) "
                              "to your next message · /attach lists · /attach clear drops")
        elif session.staged:
            await self.notice("attached to your next message: " + attached_line(
                [AttachedFile(a.path, a.lines) for a in session.staged.values()]).removeprefix("📎 "))
        else:
            await self.notice("no file is attached: /attach FILE adds one to your next message")
        self.show_staged()

    def show_staged(self) -> None:
        staged = self.session.staged if self.session is not None else {}
        count = len(staged)
        self.status.show_attached(f"📎 {count} file{'' if count == 1 else 's'} for the next message" if count else "")

    async def in_background(self, name: str, argument: str, typed: str) -> None:
        try:
            await chat_handler(chat_commands()[name])(self, argument)
        except ZephError as exc:
            await self.notice(str(exc), "error")
            self.restore_input(typed)

    # ---- what a feature's command uses (`features.ChatHost`) ---------------------------------------

    async def show(self, markdown: str) -> None:
        """Markdown in the transcript, as /help shows its table."""
        await self.transcript.add(HelpEntry(markdown))

    def put_input(self, text: str) -> None:
        """Text into the input box to edit and send."""
        self.restore_input(text)
        self.prompt.focus()

    async def compact(self) -> None:
        from ..event_handler import dispatch
        from .turn_view import TurnView, failure_text

        try:
            view = TurnView(self)
            async for event in self.session.compact():
                await dispatch(event, view)
        except ZephError as exc:
            await self.notice(failure_text(exc), "error")
        finally:
            self.status.show_badge("")
        self.refresh_gauge()

    async def show_context(self) -> None:
        from .screens import ContextScreen

        report = self.session.context_report()
        # turn_reports[-1] is the context after the last turn (now, unless a command changed it);
        # the one before is where the previous turn left it.
        previous = self.turn_reports[-2] if len(self.turn_reports) > 1 else None
        self.push_screen(ContextScreen(report, previous, self.session.metrics_lines()))

    async def show_context_text(self) -> None:
        """/context text: the next request's text, block by block, as `zeph context --text` prints it."""
        from ...store.export import fenced
        from ..render import sent_text_lines

        await self.transcript.add(HelpEntry(fenced("\n".join(sent_text_lines(self.session.context_sections())))))

    async def pick_session(self, query: str) -> None:
        from .screens import SessionsScreen

        def rows(text: str) -> list[tuple[int, str, str, int]]:
            return [
                (s.id, s.title, s.updated_at.replace("T", " ")[:16], s.message_count) for s in self.session.sessions(text)
            ]

        chosen = await self.push_screen_wait(SessionsScreen(rows, query))
        if chosen is None:
            return
        if self.busy:
            await self.notice("a turn is running: switch sessions after it ends", "warning")
            return
        try:
            self.session.switch(chosen)
        except ZephError as exc:
            await self.notice(str(exc), "error")
            return
        self.turn_reports = []
        self.update_header()
        await self.load_transcript()
        self.refresh_gauge()

