"""One MCP server: started, initialized and listed within its timeout, then talked to until closed.

Invariant: the SDK's context managers (transport and `ClientSession`) are
entered and exited by one long-lived task per server, so closing never crosses
tasks; other tasks only send requests through the open session. A server is
"running" only after it initialized and listed its tools; any failure leaves it
"failed" with a one-line reason, and nothing the SDK or the transport raises
escapes as anything but `ServerError`. A stdio server's stderr goes to its log
file, never to the terminal.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from . import exit_status
from .expand import UnsetVariable, expand_table, expand_value
from .hooks import ServerHooks

if TYPE_CHECKING:
    from mcp import ClientSession

    from ...config.mcp import McpServerEntry

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
    server_info: tuple[str, str] = ("", "")  # the name and version it reported at initialize
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
        from mcp import ClientSession

        keep_sdk_logs_off_the_terminal()
        try:
            async with contextlib.AsyncExitStack() as stack:
                read, write = await self._transport(stack)
                session = await stack.enter_async_context(ClientSession(read, write))
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
        lines = [line.strip() for line in written.splitlines() if line.strip() and not exit_status.is_mark(line)]
        return lines[-1][:200] if lines else ""

    def exit_status(self) -> int | None:
        """The status a stdio server's process exited with since it was started (None: not known, or running)."""
        return exit_status.read(self.log_path, self._log_from)

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
            command, args = exit_status.wrapped(entry.command, list(entry.args), env)
            params = StdioServerParameters(command=command, args=args, env=env or None, cwd=self.cwd)
            streams = await stack.enter_async_context(stdio_client(params, errlog=log))
        else:
            import httpx2
            from mcp.client.streamable_http import streamable_http_client
            from mcp.shared._httpx_utils import create_mcp_http_client

            client = create_mcp_http_client(headers=headers, timeout=httpx2.Timeout(entry.timeout, read=300.0))

            async def remember_refusal(response: httpx2.Response) -> None:
                if response.status_code >= 400:  # the SDK's error says only "an error response"
                    self._http_refusal = f"{entry.url} answered HTTP {response.status_code} {response.reason_phrase}"

            client.event_hooks["response"].append(remember_refusal)
            await stack.enter_async_context(client)
            streams = await stack.enter_async_context(streamable_http_client(url, http_client=client))
        return streams[0], streams[1]

    async def _initialize(self, session: ClientSession) -> None:
        init = await session.initialize()
        self.server_info = (init.server_info.name, init.server_info.version)
        tools: list[ListedTool] = []
        cursor: str | None = None
        while True:
            from mcp.types import PaginatedRequestParams

            page = await session.list_tools(params=PaginatedRequestParams(cursor=cursor) if cursor else None)
            for tool in page.tools:
                hints = tool.annotations
                tools.append(ListedTool(tool.name, tool.description or "", dict(tool.input_schema),
                                        bool(hints is not None and hints.read_only_hint)))
            cursor = page.next_cursor
            if not cursor:
                break
        self.tools = tools
        if init.capabilities.prompts is not None:
            listed = await session.list_prompts()
            self.prompts = [
                ListedPrompt(p.name, p.description or "",
                             tuple((a.name, bool(a.required), a.description or "") for a in p.arguments or ()))
                for p in listed.prompts
            ]

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

    async def call_tool(self, tool: str, arguments: dict[str, Any], timeout: float) -> Any:
        """The server's `CallToolResult`; `ServerError` naming the server on any failure."""
        session = self._running_session()
        self._http_refusal = ""
        try:
            return await asyncio.wait_for(session.call_tool(tool, arguments, read_timeout_seconds=timeout),
                                          timeout + 1.0)
        except TimeoutError:
            raise ServerError(f"MCP server {self.id}: {tool} did not answer within {timeout:g} s") from None
        except asyncio.CancelledError:
            raise
        except Exception as exc:  # noqa: BLE001 - SDK and transport errors become one line
            self._after_failure(exc)
            raise ServerError(f"MCP server {self.id}: {tool} failed: {self._http_refusal or describe(exc)}") from None

    async def get_prompt(self, name: str, arguments: dict[str, str]) -> Any:
        session = self._running_session()
        try:
            return await asyncio.wait_for(session.get_prompt(name, arguments), self.entry.timeout)
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


def keep_sdk_logs_off_the_terminal() -> None:
    """The terminal belongs to zeph (and the chat app): the `mcp` loggers write to zeph's log instead."""
    sdk = logging.getLogger("mcp")
    if not any(isinstance(h, _ToZephLog) for h in sdk.handlers):
        sdk.addHandler(_ToZephLog(logging.WARNING))
        sdk.propagate = False
