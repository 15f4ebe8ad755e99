"""One MCP server: started, initialized and listed within its timeout, then talked to until closed.

Invariant: the SDK's context managers (transport and `ClientSession`) are
entered and exited by one long-lived task per server, so closing never crosses
tasks; other tasks only send requests through the open session. A server is
"running" only after it initialized and listed its tools; any failure leaves it
"failed" with a one-line reason, and nothing the SDK or the transport raises
escapes as anything but `ServerError`. A stdio server's stderr goes to its log
file, never to the terminal.

What zeph says it is: `clientInfo` zeph and its version; capabilities exactly
what it implements (form elicitation, roots without list_changed). What the
server sends back goes through the shared `ServerHooks`, called inside a guard
so nothing a hook raises reaches the SDK: its log messages at or above its
`log_level` (also written to `mcp/ID.log`), its form requests (answered by
`hooks.elicit`; URL mode and forms no dialog can ask are declined), the roots
(`hooks.roots()` as file:// URIs), and its `list_changed` notifications, after
which that list is read again whole (every page) and replaced at once before
`hooks.on_change` is told. A tool that requires task augmentation is never in
`tools` (it is named in `needs_tasks`). A tool call's `timeout` is an idle
limit that each progress update restarts (and that stands still while the user
answers the server's form), `max_timeout` the cap from the call's start; at
either the call is cancelled (the SDK tells the server) and the error names
the limit and its key.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import warnings
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ...tools.elicitation import ElicitationRequest
from ...waiting import within
from .exit_status import is_mark, read as read_exit_status, wrapped
from .elicit import UnaskableForm, answer_content, form_fields
from .expand import UnsetVariable, expand_table, expand_value
from .hooks import ServerHooks
from .resources import ListedResource, ListedTemplate, listed_resource, listed_template
from .server_log import append_line, message_text, severity

if TYPE_CHECKING:
    from mcp import ClientSession

    from ...config.mcp import McpServerEntry

# What a tool call reports as it runs: (message, progress, total), any of them possibly empty.
ProgressReport = Callable[[str, "float | None", "float | None"], None]

log = logging.getLogger("zeph.mcp")

LOG_ROTATE_BYTES = 1 << 20  # a server's log past this is moved to ID.log.1 (replacing it) when it starts again
CLOSE_GRACE_SECS = 8.0  # the SDK gives a stdio server up to ~6 s to exit before it is killed


class ServerError(Exception):
    """A one-line failure of a server (it names the server)."""


@dataclass(frozen=True)
class ListedTool:
    name: str
    description: str
    input_schema: dict[str, Any]
    read_only: bool


@dataclass(frozen=True)
class ListedPrompt:
    name: str
    description: str
    arguments: tuple[tuple[str, bool, str], ...]  # (name, required, description)


class _CallClock:
    """One tool call's limits as the deadline of its `asyncio.timeout`: `idle` seconds from the last sign of
    life (the start, a progress update, an answered form), never past `cap` seconds from the start."""

    def __init__(self, idle: float, cap: float) -> None:
        self.loop = asyncio.get_running_loop()
        self.idle = idle
        self.cap_at = self.loop.time() + cap
        self.waiting = 0  # forms the user is answering: only the cap runs meanwhile
        self.scope: asyncio.Timeout | None = None

    def deadline(self) -> float:
        return min(self.loop.time() + self.idle, self.cap_at)

    def alive(self) -> None:
        if self.scope is not None and not self.waiting and not self.scope.expired():
            self.scope.reschedule(self.deadline())

    def asking(self) -> None:
        self.waiting += 1
        if self.scope is not None and not self.scope.expired():
            self.scope.reschedule(self.cap_at)

    def answered(self) -> None:
        self.waiting -= 1
        self.alive()

    def capped(self) -> bool:
        return self.loop.time() >= self.cap_at - 0.01


@dataclass
class ServerConnection:
    entry: McpServerEntry
    env: Mapping[str, str]
    cwd: Path
    log_dir: Path
    hooks: ServerHooks = field(default_factory=ServerHooks)
    state: str = "not started"
    reason: str = ""
    tools: list[ListedTool] = field(default_factory=list)
    prompts: list[ListedPrompt] = field(default_factory=list)
    needs_tasks: list[str] = field(default_factory=list)  # tools left out: they require task augmentation
    instructions: str = ""  # what the server says about using it (initialize's `instructions`)
    server_name: str = ""  # the name and version the server reports
    server_version: str = ""
    _capabilities: Any = None  # the server's, from initialize
    _clocks: set[_CallClock] = field(default_factory=set)  # the calls in flight
    _relisting: dict[str, bool] = field(default_factory=dict)  # kind -> changed again while being listed
    _lists_read: asyncio.Event = field(default_factory=asyncio.Event)  # set while no list is being read again
    _session: ClientSession | None = None
    _task: asyncio.Task[None] | None = None
    _ready: asyncio.Event = field(default_factory=asyncio.Event)
    _stop: asyncio.Event = field(default_factory=asyncio.Event)
    _http_refusal: str = ""
    _log_from: int = 0  # where this start's lines begin in the (appended) log

    def __post_init__(self) -> None:
        if not self.entry.enabled:
            self.state = "disabled"

    @property
    def id(self) -> str:
        return self.entry.id

    @property
    def log_path(self) -> Path | None:
        return self.log_dir / f"{self.id}.log" if self.entry.transport == "stdio" else None

    # ---- life cycle --------------------------------------------------------------

    async def start(self) -> None:
        """Start, initialize and list within the entry's timeout; the state says how it went."""
        if self._task is not None or self.state == "disabled":
            return
        self._task = asyncio.create_task(self._own(), name=f"mcp server {self.id}")
        try:
            await asyncio.wait_for(self._ready.wait(), self.entry.timeout + 2.0)
        except TimeoutError:
            self._fail(f"did not start within {self.entry.timeout:g} s")
            await self.close()

    async def _own(self) -> None:
        """The server's whole life, in this one task: enter, serve until asked to stop, exit."""
        keep_sdk_logs_off_the_terminal()
        try:
            async with contextlib.AsyncExitStack() as stack:
                read, write = await self._transport(stack)
                session = await stack.enter_async_context(self._new_session(read, write))
                if not await self._initialized(session):
                    return  # closed while starting: the contexts exit as usual, and the process with them
                self._session = session
                self.state = "running"
                self._ready.set()
                await self._stop.wait()
        except asyncio.CancelledError:
            if not self._stop.is_set():
                self._fail("stopped")
        except BaseException as exc:  # noqa: BLE001 - every failure of a server is reported, never raised
            if not self._stop.is_set() and self.state != "failed":  # a reason given already stands
                reason = self._http_refusal or self._unreachable(exc) or describe(exc)
                said = self.last_words()
                self._fail(f"{reason}; its log ends: {said!r}" if said else reason)
        finally:
            self._session = None
            if self.state == "running":
                self.state = "failed" if not self._stop.is_set() else "not started"
                self.reason = self.reason or "the connection closed"
            self._ready.set()

    async def _initialized(self, session: ClientSession) -> bool:
        """Initialize and list within the timeout, unless `close()` comes first (False). The request runs in
        its own task so that a close is noticed at once, and the owner task never has to be cancelled
        (cancelling it inside the SDK's stdio shutdown can leave it stuck, and the server running)."""
        request = asyncio.ensure_future(self._initialize(session))
        stop = asyncio.ensure_future(self._stop.wait())
        try:
            done, _ = await asyncio.wait({request, stop}, timeout=self.entry.timeout,
                                         return_when=asyncio.FIRST_COMPLETED)
        finally:
            stop.cancel()
            if not request.done():
                request.cancel()
                await asyncio.wait({request})
        if request in done:
            request.result()  # its failure, if any, is the server's
            return True
        if self._stop.is_set():
            return False
        self._fail(f"did not answer within {self.entry.timeout:g} s")
        self._ready.set()  # start() returns now; the process is stopped as the contexts exit
        raise ServerError(self.reason)

    def last_words(self) -> str:
        """The last line a stdio server wrote to its log since it was started ("" if none): often why it stopped."""
        path = self.log_path
        if path is None:
            return ""
        try:
            with open(path, "rb") as log:
                log.seek(self._log_from)
                written = log.read()[-8192:].decode("utf-8", "replace")
        except OSError:
            return ""
        lines = [line.strip() for line in written.splitlines() if line.strip() and not is_mark(line)]
        return lines[-1][:200] if lines else ""

    @property
    def capabilities(self) -> Any:
        """What the server declared at initialize (None before it did)."""
        return self._capabilities

    def exit_status(self) -> int | None:
        """The status a stdio server's process exited with since it was started (None: not known, or running)."""
        return read_exit_status(self.log_path, self._log_from)

    def _unreachable(self, exc: BaseException) -> str:
        """For an HTTP server nothing answers at: which URL, and why ("" for any other failure)."""
        while isinstance(exc, BaseExceptionGroup) and exc.exceptions:
            exc = exc.exceptions[0]
        if not self.entry.url or "Connect" not in type(exc).__name__:
            return ""
        return f"could not connect to {self.entry.url} ({describe(exc)})"

    async def _transport(self, stack: contextlib.AsyncExitStack) -> tuple[Any, Any]:
        entry = self.entry
        try:
            env = expand_table(entry.id, "env", entry.env, self.env)
            headers = expand_table(entry.id, "headers", entry.headers, self.env)
            url = expand_value(entry.id, "url", entry.url, self.env)  # messages name the url as written
        except UnsetVariable as exc:
            raise ServerError(str(exc).removeprefix(f"MCP server {entry.id}: ")) from None
        if entry.transport == "stdio":
            from mcp.client.stdio import StdioServerParameters, stdio_client

            log_path = self.log_path
            assert log_path is not None
            log_path.parent.mkdir(parents=True, exist_ok=True)
            _rotate(log_path)
            log = stack.enter_context(open(log_path, "a", encoding="utf-8"))  # noqa: ASYNC230 — a local append, once per server start
            self._log_from = log.tell()
            command, args = wrapped(entry.command, list(entry.args), env)
            params = StdioServerParameters(command=command, args=args, env=env or None, cwd=self.cwd)
            streams = await stack.enter_async_context(stdio_client(params, errlog=log))
        else:
            import httpx2
            from mcp.client.streamable_http import streamable_http_client
            from mcp.shared._httpx_utils import create_mcp_http_client

            # reading waits for a whole call when the server answers in one piece: as long as max_timeout allows
            read = max(300.0, entry.max_timeout, entry.timeout) + 5.0
            client = create_mcp_http_client(headers=headers, timeout=httpx2.Timeout(entry.timeout, read=read))

            async def remember_refusal(response: httpx2.Response) -> None:
                if response.status_code >= 400:  # the SDK's error says only "an error response"
                    self._http_refusal = f"{entry.url} answered HTTP {response.status_code} {response.reason_phrase}"

            client.event_hooks["response"].append(remember_refusal)
            await stack.enter_async_context(client)
            streams = await stack.enter_async_context(streamable_http_client(url, http_client=client))
        return streams[0], streams[1]

    def _new_session(self, read: Any, write: Any) -> ClientSession:
        """The SDK session with zeph's identity and its answers to what a server may ask or tell."""
        from mcp.types import Implementation

        return _zeph_session_class()(
            read, write, client_info=Implementation(name="zeph", version=_zeph_version()),
            elicitation_callback=self._elicit, list_roots_callback=self._roots, logging_callback=self._logged,
            message_handler=self._notified, log_level=self.entry.log_level,
        )

    async def _initialize(self, session: ClientSession) -> None:
        init = await session.initialize()
        self._capabilities = init.capabilities
        self.has_resources = init.capabilities.resources is not None  # kept when it stops (crash, cache)
        self.instructions = (init.instructions or "").strip()
        self.server_name, self.server_version = init.server_info.name, init.server_info.version
        if init.capabilities.logging is not None:
            try:
                with warnings.catch_warnings():  # deprecated in the 2026 revision, which these servers do not speak
                    warnings.simplefilter("ignore")
                    await session.set_logging_level(self.entry.log_level)  # type: ignore[arg-type]
            except Exception as exc:  # noqa: BLE001 - a server that refuses its level still serves; said in its log
                append_line(self.message_log_path, "notice", f"zeph: logging/setLevel {self.entry.log_level} failed: {describe(exc)}")
        await self._list_tools(session)
        await self._list_prompts(session)
        await self._list_resources_at_start(session)

    async def _list_tools(self, session: ClientSession) -> None:
        """Every page of tools/list, replacing `tools` (and `needs_tasks`) at once."""
        tools: list[ListedTool] = []
        needs_tasks: list[str] = []
        for tool in await every_page(lambda params: session.list_tools(params=params), "tools"):
            if tool.execution is not None and tool.execution.task_support == "required":
                needs_tasks.append(tool.name)
                continue
            hints = tool.annotations
            tools.append(ListedTool(tool.name, tool.description or "", dict(tool.input_schema),
                                    bool(hints is not None and hints.read_only_hint)))
        self.tools, self.needs_tasks = tools, needs_tasks

    async def _list_prompts(self, session: ClientSession) -> None:
        """Every page of prompts/list, replacing `prompts` at once (none when the server has no prompts)."""
        if self._capabilities is None or self._capabilities.prompts is None:
            return
        self.prompts = [
            ListedPrompt(p.name, p.description or "",
                         tuple((a.name, bool(a.required), a.description or "") for a in p.arguments or ()))
            for p in await every_page(lambda params: session.list_prompts(params=params), "prompts")
        ]

    # ---- what the server asks and tells ---------------------------------------------

    @property
    def message_log_path(self) -> Path:
        """Where the server's log messages go: its stderr log for stdio, a file of the same name for HTTP."""
        return self.log_dir / f"{self.id}.log"

    async def _logged(self, params: Any) -> None:
        level = str(params.level)
        if severity(level) < severity(self.entry.log_level):
            return
        text = message_text(params.logger, params.data)
        append_line(self.message_log_path, level, text)
        self._tell("on_log", self.id, level, text)

    async def _notified(self, message: Any) -> None:
        """A list changed: read it again (a change during the reading is read once more after it)."""
        from mcp.types import PromptListChangedNotification, ResourceListChangedNotification, ToolListChangedNotification

        kind = ("tools" if isinstance(message, ToolListChangedNotification)
                else "prompts" if isinstance(message, PromptListChangedNotification)
                else "resources" if isinstance(message, ResourceListChangedNotification) else None)
        session = self._session
        if kind is None or session is None or self.state != "running":
            return  # (before it runs, the first listing is still to come)
        lister = getattr(self, f"_list_{kind}", None)  # the resources section defines `_list_resources`
        if lister is None:
            return
        if kind in self._relisting:
            self._relisting[kind] = True
            return
        self._relisting[kind] = False
        self._lists_read.clear()
        try:
            while True:
                self._relisting[kind] = False
                try:
                    await asyncio.wait_for(lister(session), self.entry.timeout)
                except Exception as exc:  # noqa: BLE001 - the old list stands; said in zeph's log
                    log.warning("MCP server %s: listing its %s again failed: %s", self.id, kind, describe(exc))
                    return
                if not self._relisting[kind]:
                    break
            self._tell("on_change", self.id, kind)
        finally:
            del self._relisting[kind]
            if not self._relisting:
                self._lists_read.set()

    async def _lists_settled(self) -> None:
        """Before a call's answer is handed on: a list the server said changed during the call is read again
        first (within the timeout), so the very next request offers it. The server's notification comes before
        its answer, and its handler is scheduled first: one pass of the loop lets it begin."""
        await asyncio.sleep(0)
        if self._relisting:
            with contextlib.suppress(TimeoutError):
                await within(self._lists_read.wait(), self.entry.timeout)

    async def _elicit(self, context: Any, params: Any) -> Any:
        """A server's form, asked through `hooks.elicit`; URL mode and forms no dialog can show are declined."""
        from mcp.types import ElicitResult

        if getattr(params, "mode", "form") != "form":
            append_line(self.message_log_path, "notice", "zeph: declined a URL-mode elicitation (not supported)")
            return ElicitResult(action="decline")
        try:
            fields = form_fields(params.requested_schema)
        except UnaskableForm as exc:
            append_line(self.message_log_path, "notice", f"zeph: declined a form: {exc}")
            return ElicitResult(action="decline")
        request = ElicitationRequest(self.id, params.message, fields)
        clocks = list(self._clocks)
        for clock in clocks:
            clock.asking()
        try:
            answer = await self.hooks.elicit(request)
            return ElicitResult(action=answer.action, content=answer_content(answer, fields))
        except Exception as exc:  # noqa: BLE001 - an asker that fails declines, never breaks the call
            log.warning("MCP server %s: asking for its form failed: %s", self.id, describe(exc))
            return ElicitResult(action="decline")
        finally:
            for clock in clocks:
                clock.answered()

    async def _roots(self, context: Any) -> Any:
        from mcp.types import ListRootsResult, Root

        try:
            roots = [Path(p) for p in self.hooks.roots() if Path(p).is_absolute()]
        except Exception as exc:  # noqa: BLE001
            log.warning("MCP server %s: the roots could not be given: %s", self.id, describe(exc))
            roots = []
        return ListRootsResult(roots=[Root(uri=p.as_uri(), name=p.name or str(p)) for p in roots])  # type: ignore[arg-type]

    def _tell(self, hook: str, *args: Any) -> None:
        try:
            getattr(self.hooks, hook)(*args)
        except Exception as exc:  # noqa: BLE001 - a hook never breaks the connection
            log.warning("MCP server %s: hook %s failed: %s", self.id, hook, describe(exc))

    def _fail(self, reason: str) -> None:
        self.state = "failed"
        self.reason = reason

    @property
    def started(self) -> bool:
        """Whether `start()` has run the server's task (a disabled server never does)."""
        return self._task is not None

    def closed_under_us(self) -> bool:
        """Whether a running server's connection ended (its process exited) since it started."""
        if self.state != "running":
            return False
        if self._task is not None and self._task.done():
            return True
        dispatcher = getattr(self._session, "_dispatcher", None)
        return bool(getattr(dispatcher, "_closed", False))

    def mark_dead(self, reason: str) -> None:
        if self.state == "running":
            self._fail(reason)

    async def close(self) -> None:
        """Stop the server (its owner task exits the SDK's contexts); bounded, idempotent, never raises."""
        self._stop.set()
        task = self._task
        if task is None or task.done():
            return
        done, _ = await asyncio.wait({task}, timeout=CLOSE_GRACE_SECS)
        if not done:
            task.cancel()  # a last resort, never waited for without a bound
            await asyncio.wait({task}, timeout=2.0)

    # ---- requests ----------------------------------------------------------------

    def _running_session(self) -> ClientSession:
        if self.closed_under_us():
            self._fail("the connection closed")
        session = self._session
        if self.state != "running" or session is None:
            why = f" ({self.reason})" if self.reason else ""
            raise ServerError(f"MCP server {self.id} is not running{why}")
        return session

    async def call_tool(self, tool: str, arguments: dict[str, Any], timeout: float,
                        progress: ProgressReport | None = None) -> Any:
        """The server's `CallToolResult`; `ServerError` naming the server on any failure. The call carries a
        progress token; each update goes to `progress` and restarts the `timeout` (idle) clock, up to the
        entry's `max_timeout` from the start."""
        session = self._running_session()
        self._http_refusal = ""
        cap = max(self.entry.max_timeout, timeout)
        clock = _CallClock(timeout, cap)

        report = progress

        async def on_progress(progress: float, total: float | None, message: str | None) -> None:
            clock.alive()
            if report is not None:
                try:
                    report(message or "", progress, total)
                except Exception as exc:  # noqa: BLE001 - a display never breaks the call
                    log.warning("MCP server %s: showing progress failed: %s", self.id, describe(exc))

        self._clocks.add(clock)
        try:
            async with asyncio.timeout_at(clock.deadline()) as scope:
                clock.scope = scope
                # `within`, not a bare await: a Ctrl+C that comes as the answer does is never lost (waiting.py)
                answer = await within(session.call_tool(tool, arguments, progress_callback=on_progress), cap + 1.0)
            await self._lists_settled()
            return answer
        except TimeoutError as exc:
            if clock.scope is None or not clock.scope.expired():  # not our clock: the transport's own
                self._after_failure(exc)
                raise ServerError(f"MCP server {self.id}: {tool} failed: {describe(exc)}") from None
            if clock.capped():
                raise ServerError(f"MCP server {self.id}: {tool} ran past max_timeout = {cap:g} s "
                                  f"(mcp.servers[].max_timeout) and was cancelled") from None
            raise ServerError(f"MCP server {self.id}: {tool} did not answer within {timeout:g} s "
                              f"(mcp.servers[].timeout; progress extends it up to max_timeout = {cap:g} s)") from None
        except asyncio.CancelledError:
            raise
        except Exception as exc:  # noqa: BLE001 - SDK and transport errors become one line
            self._after_failure(exc)
            raise ServerError(f"MCP server {self.id}: {tool} failed: {self._http_refusal or describe(exc)}") from None
        finally:
            clock.scope = None  # a progress update that comes late moves nothing
            self._clocks.discard(clock)

    async def get_prompt(self, name: str, arguments: dict[str, str]) -> Any:
        session = self._running_session()
        try:
            return await within(session.get_prompt(name, arguments), self.entry.timeout)
        except TimeoutError:
            raise ServerError(f"MCP server {self.id}: prompt {name} did not arrive within {self.entry.timeout:g} s") from None
        except asyncio.CancelledError:
            raise
        except Exception as exc:  # noqa: BLE001
            self._after_failure(exc)
            raise ServerError(f"MCP server {self.id}: prompt {name}: {describe(exc)}") from None

    def _after_failure(self, exc: Exception) -> None:
        from mcp.types import CONNECTION_CLOSED
        from mcp.shared.exceptions import MCPError

        if (isinstance(exc, MCPError) and exc.code == CONNECTION_CLOSED) or self.closed_under_us():
            self._fail("the connection closed")
        elif not isinstance(exc, MCPError):
            self._fail(describe(exc))  # the transport broke: the server is gone or unreachable

    # ---- resources ---------------------------------------------------------------
    # What the server lists of its resources and templates (every page), once asked: `list_resources()` lists
    # them again (after notifications/resources/list_changed, say). Fields of the dataclass, kept here.
    resources: list[ListedResource] = field(default_factory=list)
    resource_templates: list[ListedTemplate] = field(default_factory=list)
    resources_listed: bool = False
    has_resources: bool = False  # it declared resources: at its start, or as a listing kept from a run says

    @property
    def lists_resources(self) -> bool:
        """Whether the running server has resources to offer: it declared them and listed some (or templates),
        or they could not be listed yet. Many servers declare the capability and list none."""
        return self.has_resources and (not self.resources_listed or bool(self.resources or self.resource_templates))

    async def _list_resources_at_start(self, session: ClientSession) -> None:
        """While initializing: list the resources a server declares (a failure leaves them to be listed when
        asked for: the server still starts)."""
        capabilities = session.server_capabilities
        if capabilities is None or capabilities.resources is None:
            return
        try:
            await asyncio.wait_for(self._list_resources(session), self.entry.timeout / 2)
        except asyncio.CancelledError:
            raise
        except Exception:  # noqa: BLE001 - listed again when asked, which then says why it failed (a slow list too)
            return

    async def list_resources(self) -> None:
        """List every page of the server's resources and templates (within its timeout); `ServerError` names
        the server. A server that declares no resources lists none."""
        session = self._running_session()
        if not self.has_resources:
            self.resources, self.resource_templates, self.resources_listed = [], [], True
            return
        try:
            await within(self._list_resources(session), self.entry.timeout)
        except TimeoutError:
            raise ServerError(f"MCP server {self.id}: its resources were not listed within "
                              f"{self.entry.timeout:g} s") from None
        except asyncio.CancelledError:
            raise
        except Exception as exc:  # noqa: BLE001 - SDK and transport errors become one line
            self._after_failure(exc)
            raise ServerError(f"MCP server {self.id}: listing its resources failed: {describe(exc)}") from None

    async def _list_resources(self, session: ClientSession) -> None:
        """Every page of resources and templates, replacing both at once (resources/list_changed)."""
        self.resources, self.resource_templates = await self._all_resources(session)
        self.resources_listed = True

    async def _all_resources(self, session: ClientSession) -> tuple[list[ListedResource], list[ListedTemplate]]:
        from mcp.shared.exceptions import MCPError
        from mcp.types import METHOD_NOT_FOUND

        resources = [listed_resource(r) for r in
                     await every_page(lambda params: session.list_resources(params=params), "resources")]
        try:
            templates = [listed_template(t) for t in await every_page(
                lambda params: session.list_resource_templates(params=params), "resource_templates")]
        except MCPError as exc:
            if exc.code != METHOD_NOT_FOUND:  # templates are optional: a server without them may not know the method
                raise
            templates = []
        return resources, templates

    async def read_resource(self, uri: str) -> Any:
        """The server's `ReadResourceResult` for `uri`; `ServerError` naming the server and the URI."""
        session = self._running_session()
        if not self.has_resources:
            raise ServerError(f"MCP server {self.id} offers no resources")
        try:
            return await within(session.read_resource(uri), self.entry.timeout)
        except TimeoutError:
            raise ServerError(f"MCP server {self.id}: {uri} was not read within {self.entry.timeout:g} s "
                              "(mcp.servers[].timeout)") from None
        except asyncio.CancelledError:
            raise
        except Exception as exc:  # noqa: BLE001
            self._after_failure(exc)
            raise ServerError(f"MCP server {self.id}: cannot read {uri}: {describe(exc)}") from None


async def every_page(request: Callable[[Any], Awaitable[Any]], items: str) -> list[Any]:
    """Every item of a paged list request (`items`: the field of a page that holds them), following each
    page's `next_cursor` to the end."""
    from mcp.types import PaginatedRequestParams

    found: list[Any] = []
    cursor: str | None = None
    while True:
        page = await request(PaginatedRequestParams(cursor=cursor) if cursor else None)
        found += getattr(page, items)
        cursor = page.next_cursor
        if not cursor:
            return found


def _rotate(log_path: Path) -> None:
    """Keep a server's log bounded: past LOG_ROTATE_BYTES it becomes ID.log.1 and a new one starts."""
    try:
        if log_path.stat().st_size > LOG_ROTATE_BYTES:
            log_path.replace(log_path.with_name(log_path.name + ".1"))
    except OSError:
        pass  # no log yet, or it cannot be moved: appending still works


def describe(exc: BaseException) -> str:
    """One line for an exception (groups from task groups are unwrapped to their first cause)."""
    while isinstance(exc, BaseExceptionGroup) and exc.exceptions:
        exc = exc.exceptions[0]
    if isinstance(exc, ServerError):
        return str(exc)
    text = " ".join(str(exc).split()) or type(exc).__name__
    if isinstance(exc, FileNotFoundError):
        return f"command not found: {exc.filename or text}"
    message = getattr(exc, "message", None)
    if isinstance(message, str) and message:
        text = message
    return text[:300]


class _ToZephLog(logging.Handler):
    """The SDK's warnings (a server's unreadable output, a dropped stream) go to zeph's log file."""

    def emit(self, record: logging.LogRecord) -> None:
        for handler in logging.getLogger("zeph").handlers:
            if record.levelno >= handler.level:
                handler.handle(record)


_SESSION_CLASS: Any = None


def _zeph_session_class() -> Any:
    """`ClientSession` declaring what zeph implements: form elicitation only (URL mode is declined), and roots
    without list_changed (the workspace does not change under a session). The SDK would declare both in full."""
    global _SESSION_CLASS
    if _SESSION_CLASS is None:
        from mcp import ClientSession
        from mcp.types import ClientCapabilities, ElicitationCapability, FormElicitationCapability, RootsCapability

        class ZephSession(ClientSession):
            def _build_capabilities(self, version: str) -> ClientCapabilities:
                declared = super()._build_capabilities(version)
                return declared.model_copy(update={
                    "elicitation": ElicitationCapability(form=FormElicitationCapability()),
                    "roots": RootsCapability(list_changed=False),
                })

        _SESSION_CLASS = ZephSession
    return _SESSION_CLASS


def _zeph_version() -> str:
    from ... import __version__

    return __version__


def keep_sdk_logs_off_the_terminal() -> None:
    """The terminal belongs to zeph (and the chat app): the `mcp` loggers write to zeph's log instead."""
    sdk = logging.getLogger("mcp")
    if not any(isinstance(h, _ToZephLog) for h in sdk.handlers):
        sdk.addHandler(_ToZephLog(logging.WARNING))
        sdk.propagate = False
