"""All configured MCP servers of one agent: their tools offered from a fresh listing or from the cache,
each server started when something needs it, restarted after a crash, closed together.

Invariants:
- A server starts only through `_bring_up` (a turn's `prepare_turn` for servers never listed — without
  waiting for one whose last start failed lately —, a call to
  one of its tools, `start()` for /mcp and `zeph mcp`, `start_in_background()` at the chat app's launch,
  `restart()`), once at a time: concurrent needs share one start, which a cancelled caller does not stop.
  Servers stop only in `aclose()` (and `restart()`).
- A server with a cached listing (`cache.py`) is offered its cached tools without being started; its
  fresh listing replaces the cache and the tools offered from the next request on. A turn waits only
  for servers never listed whose last start did not fail; a call waits for its own server's start.
- A stdio server whose process exits after it was running has crashed: one notice names its exit status
  and the last line of its log; it is started again when next needed, RESTART_BACKOFF apart, at most
  MAX_RESTARTS times per session, after which its tools are no longer offered. `restart(id)` resets that.
  An HTTP server whose connection ends is reported once and its tools are withdrawn.
- `tools()` offers only tools that pass their server's `tool_allowlist`, under `ID__TOOL` names. Every
  problem is one line naming the server, said once (`take_warnings`).
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ...config.mcp import McpServerEntry, ToolDiscoveryConfig
from ...messages import ImagePart
from ...paths import cache_dir, mcp_log_dir
from .cache import Listing, ListingCache, ToolVectors, cache_key
from .connection import ListedPrompt, ProgressReport, ServerConnection, ServerError
from .hooks import ServerHooks
from .discovery import EmbedderSource, ToolDiscovery
from .names import ToolNames
from .prompts import prompt_messages
from .resources import ResourceError, ResourceListing, contents_parts
from .server_log import LogNotices
from .tools import McpTool

if TYPE_CHECKING:
    from ...config import Config

RESTART_BACKOFF = (1.0, 2.0, 4.0)  # seconds from a crash (or a failed restart) to the next try
MAX_RESTARTS = 3  # per server per session


class PromptError(Exception):
    """A prompt could not be fetched: one line naming the server and the prompt."""


@dataclass(frozen=True)
class ServerStatus:
    id: str
    transport: str
    state: str  # "not started" | "running" | "failed" | "disabled"
    reason: str
    tools: list[str]
    log_path: Path | None


@dataclass
class _Restarts:
    """A crashed server's restarts this session."""
    tries: int = 0  # restarts begun
    not_before: float = 0.0  # loop time before which the next try waits


class McpManager:
    def __init__(self, entries: Sequence[McpServerEntry], *, env: Mapping[str, str], cwd: Path, log_dir: Path,
                 discovery: ToolDiscoveryConfig | None = None, embedder: EmbedderSource = None,
                 cache: Path | None = None) -> None:
        self.hooks = ServerHooks(roots=lambda: [cwd], on_change=self._changed)
        self._env, self._cwd, self._log_dir = env, cwd, log_dir
        self.connections = {e.id: ServerConnection(e, env, cwd, log_dir, self.hooks) for e in entries}
        self.discovery = ToolDiscovery(discovery or ToolDiscoveryConfig(), embedder, ToolVectors(cache) if cache else None)
        self.names = ToolNames()
        self.cache = ListingCache(cache)
        self._keys = {e.id: cache_key(e, env, cwd) for e in entries if e.enabled} if cache is not None else {}
        self._listed: set[str] = set()  # servers whose tools are known (a cache entry or a listing this session)
        self._failed_before: dict[str, str] = {}  # servers whose last start failed lately: no turn waits for them
        self._unwaited: set[str] = set()  # those of them being started in the background
        for server_id, key in self._keys.items():
            listing = self.cache.load(server_id, key)
            if listing is not None:
                self._restore(self.connections[server_id], listing)
                self._listed.add(server_id)
            elif (reason := self.cache.failure(server_id, key)) is not None:
                self._failed_before[server_id] = reason
        self._tools: dict[str, list[McpTool]] = {}
        self.generation = 0  # counts the times a server's tools were listed anew (a turn's pick follows it)
        self._warnings: list[str] = []
        self._notes: dict[str, list[str]] = {}  # by server
        self._reported: set[str] = set()  # servers whose failure was said
        self._up: dict[str, ServerConnection] = {}  # the connection each server was last seen running on
        self._starts: dict[str, asyncio.Future[None]] = {}
        self._restarts: dict[str, _Restarts] = {}
        self._reaping: dict[str, asyncio.Future[None]] = {}  # a crashed connection being closed, then said
        self._crash_notes: dict[str, str] = {}  # a server's last crash, as said
        self._background: asyncio.Future[None] | None = None
        self._closed = False
        self._closing = asyncio.Event()
        # What servers report (their log messages, changed lists): see "the cache and the servers' hooks" below.
        self.log_notices = LogNotices()
        self._said_needs_tasks: set[str] = set()
        self.hooks.on_log = self.log_notices.add

    @classmethod
    def from_config(cls, config: Config, env: Mapping[str, str], cwd: Path, embedder: EmbedderSource = None) -> McpManager:
        return cls(config.mcp.servers, env=env, cwd=cwd, log_dir=mcp_log_dir(env),
                   discovery=config.mcp.tool_discovery, embedder=embedder, cache=cache_dir(env) / "mcp")

    # ---- life cycle --------------------------------------------------------------

    async def start(self) -> list[str]:
        """Start every enabled server that is not running (a crashed one within its restarts), at once; what
        went wrong, one line per server (for /mcp and `zeph mcp`; other warnings wait for `take_warnings`)."""
        await self._bring_up_all()
        return self._take_notes()

    async def prepare_turn(self) -> list[str]:
        """Before a turn: a crash since the last turn is said, and the servers never listed are started (and
        waited for); a server with a cached listing is not started (its tools are offered from the cache)."""
        self._check_all()
        if self._reaping:
            await asyncio.wait(set(self._reaping.values()))
        pending = [c.id for c in self.connections.values() if c.state == "not started" and c.id not in self._listed]
        for server_id in [i for i in pending if i in self._failed_before]:
            reason = self._failed_before.pop(server_id)
            self._note(server_id, f"MCP server {server_id} did not start last time ({reason}); it is starting in "
                                  "the background, and its tools are offered once it is up (from a later turn)")
            self._unwaited.add(server_id)
            self._need_in_background(server_id)
        waited = [i for i in pending if i not in self._unwaited]
        if waited:
            await asyncio.gather(*(self._need(i) for i in waited))
        return self.take_warnings()

    def start_in_background(self) -> None:
        """Start every server now without anyone waiting (the chat app's launch): fresh listings replace
        the cache and the tools offered from the next request on; notes wait for the next turn."""
        if self._background is None and not self._closed:
            self._background = asyncio.ensure_future(self._bring_up_all())

    async def restart(self, server_id: str) -> list[str]:
        """`/mcp restart ID`: stop the server if it runs, start it now, its restarts counted afresh; one line
        saying how it went (and any other notes)."""
        conn = self.connections.get(server_id)
        if conn is None:
            known = ", ".join(self.connections) or "none configured"
            raise ServerError(f"there is no MCP server {server_id!r} (servers: {known})")
        if conn.state == "disabled":
            raise ServerError(f"MCP server {server_id} is disabled (enabled = false in its [[mcp.servers]] entry)")
        starting = self._starts.get(server_id)
        if starting is not None and not starting.done():
            await asyncio.wait({starting})
        self._check(self.connections[server_id])
        reaping = self._reaping.get(server_id)
        if reaping is not None:
            await asyncio.wait({reaping})
        self._restarts[server_id] = _Restarts()
        old = self.connections[server_id]
        self._up.pop(server_id, None)
        await old.close()
        self._reported.discard(server_id)
        self._replace(old)
        await self._need(server_id)
        conn = self.connections[server_id]
        if conn.state == "running":
            self._notes.setdefault(server_id, []).insert(0, f"MCP server {server_id} restarted ({len(conn.tools)} tools)")
        return self._take_notes()

    def take_warnings(self) -> list[str]:
        """What went wrong since the last call (a server that stopped, a stale allowlist entry), each once."""
        self._check_all()
        for conn in self.connections.values():
            self._say_needs_tasks(conn)
        out = self._take_notes() + self._warnings + self.discovery.take_warnings() + self.log_notices.take()
        self._warnings = []
        return out

    def _take_notes(self) -> list[str]:
        self._check_all()
        return [note for server_id in self.connections for note in self._notes.pop(server_id, [])]

    def _note(self, server_id: str, text: str) -> None:
        """A server's own news (a failed start, a crash), said in the servers' configured order."""
        self._notes.setdefault(server_id, []).append(text)

    async def aclose(self) -> None:
        """Stop every server; bounded, idempotent, never raises."""
        if self._closed:
            return
        self._closed = True
        self._closing.set()
        await asyncio.gather(*(c.close() for c in self.connections.values()), return_exceptions=True)
        waiting = {f for f in (*self._starts.values(), *self._reaping.values()) if not f.done()}
        if self._background is not None and not self._background.done():
            waiting.add(self._background)
        if waiting:
            await asyncio.wait(waiting, timeout=5.0)

    # ---- starting, crashes and restarts -------------------------------------------

    async def _bring_up_all(self) -> None:
        self._check_all()
        await asyncio.gather(*(self._need(c.id) for c in self.connections.values() if c.state != "disabled"))

    def _need_in_background(self, server_id: str) -> None:
        starting = self._starts.get(server_id)
        if starting is None or starting.done():
            self._starts[server_id] = asyncio.ensure_future(self._bring_up(server_id))

    async def _need(self, server_id: str) -> ServerConnection:
        """The server's connection, started (or restarted) first if it is not running; one start at a time,
        shared by every caller, and not stopped by a caller that is cancelled."""
        starting = self._starts.get(server_id)
        if starting is None or starting.done():
            conn = self.connections[server_id]
            self._check(conn)
            if conn.state == "running" or conn.state == "disabled" or self._closed:
                return conn
            starting = asyncio.ensure_future(self._bring_up(server_id))
            self._starts[server_id] = starting
        await asyncio.shield(starting)
        return self.connections[server_id]

    async def _bring_up(self, server_id: str) -> None:
        conn = self.connections[server_id]
        restarts = self._restarts.get(server_id)
        if conn.started:  # it ran (or tried to) before: only a crashed server with restarts left starts again
            if restarts is None or restarts.tries >= MAX_RESTARTS:
                return
            reaping = self._reaping.get(server_id)
            if reaping is not None:
                await asyncio.wait({reaping})
            delay = restarts.not_before - asyncio.get_running_loop().time()
            if delay > 0:
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(self._closing.wait(), delay)  # the backoff, cut short by aclose()
            if self._closed:
                return
            restarts.tries += 1
            conn = self._replace(conn)
        await conn.start()
        if conn.state == "running":
            self._up[server_id] = conn
            self._listed.add(server_id)
            self._tools.pop(server_id, None)  # the fresh list is offered from the next request
            self.generation += 1
            self._store(conn)
            return
        if self._closed or conn.state != "failed":
            return
        self._reported.add(server_id)
        if restarts is not None and restarts.tries > 0:
            restarts.not_before = asyncio.get_running_loop().time() + RESTART_BACKOFF[min(restarts.tries, len(RESTART_BACKOFF) - 1)]
            left = ("it stays stopped (/mcp restart " + server_id + " tries again)" if restarts.tries >= MAX_RESTARTS
                    else "it is tried again when next needed")
            self._note(server_id, f"MCP server {server_id} did not start again (try {restarts.tries} of {MAX_RESTARTS}): "
                                  f"{conn.reason}; {left}")
            return
        self._note(server_id, f"MCP server {server_id} did not start: {conn.reason}")
        self._listed.discard(server_id)  # its cached tools are not offered, and the next turns do not wait for it
        self._tools.pop(server_id, None)
        if server_id in self._keys:
            self.cache.save_failure(server_id, self._keys[server_id], conn.reason)

    def _replace(self, old: ServerConnection) -> ServerConnection:
        """A new connection for a server that ran before, offering its last known lists until it is running."""
        conn = ServerConnection(old.entry, self._env, self._cwd, self._log_dir, self.hooks)
        conn.tools, conn.prompts, conn.needs_tasks = list(old.tools), list(old.prompts), list(old.needs_tasks)
        conn.instructions, conn.server_name, conn.server_version = old.instructions, old.server_name, old.server_version
        conn.resources, conn.resource_templates = list(old.resources), list(old.resource_templates)
        conn.resources_listed, conn.has_resources = old.resources_listed, old.has_resources
        self.connections[old.id] = conn
        return conn

    def _check_all(self) -> None:
        for conn in list(self.connections.values()):
            self._check(conn)

    def _check(self, conn: ServerConnection) -> None:
        """Notice a server that was running and is not any more (said once, by `_reap` or here)."""
        if self._closed or self._up.get(conn.id) is not conn:
            return
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:  # not on the loop the server ran on (it ended with it): nothing to notice here
            return
        if conn.closed_under_us():
            conn.mark_dead("the connection closed")
        if conn.state == "running":
            return
        del self._up[conn.id]
        self._tools.pop(conn.id, None)
        if conn.entry.transport != "stdio":
            self._reported.add(conn.id)
            self._note(conn.id, f"MCP server {conn.id} stopped: {conn.reason}; its tools are no longer offered")
            self._listed.discard(conn.id)
            return
        restarts = self._restarts.setdefault(conn.id, _Restarts())
        restarts.not_before = loop.time() + RESTART_BACKOFF[min(restarts.tries, len(RESTART_BACKOFF) - 1)]
        self._reaping[conn.id] = asyncio.ensure_future(self._reap(conn, restarts))

    async def _reap(self, conn: ServerConnection, restarts: _Restarts) -> None:
        """Close a crashed server's connection (its exit status reaches the log), then say what happened."""
        try:
            await conn.close()
        finally:
            status = conn.exit_status()
            words = conn.last_words()
            said = f"MCP server {conn.id} exited" + (f" (status {status})" if status is not None else "")
            if words:
                said += f"; its log ends: {words!r}"
            if restarts.tries < MAX_RESTARTS:
                said += f"; it restarts when next needed (try {restarts.tries + 1} of {MAX_RESTARTS})"
            else:
                said += (f"; it was restarted {MAX_RESTARTS} times and stays stopped "
                         f"(/mcp restart {conn.id} starts it again)")
                self._listed.discard(conn.id)
            self._crash_notes[conn.id] = said
            self._note(conn.id, said)
            self._reaping.pop(conn.id, None)

    def _restartable(self, conn: ServerConnection) -> bool:
        restarts = self._restarts.get(conn.id)
        return restarts is not None and restarts.tries < MAX_RESTARTS and conn.entry.transport == "stdio"

    # ---- the cache and the servers' hooks --------------------------------------------

    def _restore(self, conn: ServerConnection, listing: Listing) -> None:
        conn.tools, conn.prompts, conn.instructions = listing.tools, listing.prompts, listing.instructions
        conn.server_name, conn.server_version = listing.server_info
        conn.resources, conn.resource_templates = listing.resources, listing.resource_templates
        conn.resources_listed, conn.has_resources = listing.resources_listed, "resources" in listing.capabilities

    def _store(self, conn: ServerConnection) -> None:
        key = self._keys.get(conn.id)
        if key is None:
            return
        declared = conn.capabilities
        capabilities = declared.model_dump(mode="json", exclude_none=True) if declared is not None else {}
        self.cache.save(conn.id, key, Listing(
            tools=list(conn.tools), prompts=list(conn.prompts), instructions=conn.instructions,
            capabilities=capabilities, server_info=(conn.server_name, conn.server_version), listed_at=time.time(),
            resources=list(conn.resources), resource_templates=list(conn.resource_templates),
            resources_listed=conn.resources_listed))

    def cached_listing(self, server_id: str) -> Listing | None:
        """The listing kept for the server under its present configuration (None: none, or no cache)."""
        key = self._keys.get(server_id)
        return self.cache.load(server_id, key) if key is not None else None

    def _changed(self, server_id: str, kind: str) -> None:
        """A server's list changed and was listed again: offered anew from the next request, and kept."""
        if kind == "tools":
            self._tools.pop(server_id, None)
            self.generation += 1
        conn = self.connections.get(server_id)
        if conn is not None and conn.state == "running":
            self._store(conn)

    # ---- tools -------------------------------------------------------------------

    def tools(self) -> list[McpTool]:
        """The tools to offer: a running server's, and those listed before (the cache, or a crashed server's
        with restarts left) of a server that starts when one of them is called."""
        self._check_all()
        out: list[McpTool] = []
        if self._closed:
            return out
        for conn in self.connections.values():
            if not self._offers(conn):
                continue
            if conn.id not in self._tools:
                self._tools[conn.id] = self._offered(conn)
            out += self._tools[conn.id]
        return out

    def _offered(self, conn: ServerConnection) -> list[McpTool]:
        allow = conn.entry.tool_allowlist
        listed = {t.name for t in conn.tools}
        for name in allow:
            if name not in listed:
                self._warnings.append(f"MCP server {conn.id}: tool_allowlist names {name!r}, which the server does not offer")
        offered = [
            McpTool(self, conn.id, self.names.add(conn.id, t.name), t, trusted=conn.entry.trusted,
                    timeout=conn.entry.timeout)
            for t in conn.tools
            if not allow or t.name in allow
        ]
        for tool in offered:
            if tool.flags:
                self._warnings.append(f"MCP server {conn.id}: the description of {tool.tool} matched a prompt-injection "
                                      f"pattern ({', '.join(tool.flags)}); it is withheld from the model")
        return offered

    async def select_tools(self, message: str, tools: Sequence[McpTool]) -> list[McpTool]:
        return await self.discovery.select(message, tools)

    async def rank_tools(self, message: str, tools: Sequence[McpTool]) -> list[McpTool]:
        """`tools`, the ones to keep first when only some fit the budget."""
        return await self.discovery.rank(message, tools)

    def _offers(self, conn: ServerConnection) -> bool:
        if conn.state == "running":
            return True
        if conn.state == "not started":
            return conn.id in self._listed
        return conn.state == "failed" and self._restartable(conn) and conn.id in self._listed

    async def call_tool(self, server_id: str, tool: str, arguments: dict[str, Any], timeout: float,
                        progress: ProgressReport | None = None) -> Any:
        """The server's result; the server is started first if it is not running (the call waits for that
        start, not counted in `timeout`). `ServerError` (one line naming the server) on any failure."""
        if server_id not in self.connections:
            raise ServerError(f"there is no MCP server {server_id!r}")
        conn = await self._need(server_id)
        if conn.state != "running":
            said = self._crash_notes.get(server_id) if conn.started else None
            why = f" ({conn.reason})" if conn.reason else ""
            raise ServerError(said or f"MCP server {server_id} is not running{why}")
        if tool not in {t.name for t in conn.tools}:
            self._tools.pop(server_id, None)
            raise ServerError(f"MCP server {server_id} no longer offers {tool} (its tools were listed again "
                              "and are offered anew from the next request)")
        try:
            return await conn.call_tool(tool, arguments, timeout, progress)
        except ServerError:
            self._check(conn)
            reaping = self._reaping.get(server_id)
            if reaping is not None:
                await asyncio.wait({reaping})
                raise ServerError(f"{self._crash_notes[server_id]} (during {tool})") from None
            raise

    def _say_needs_tasks(self, conn: ServerConnection) -> None:
        """Once per server: the tools it lists that zeph cannot call (they require task augmentation)."""
        if conn.state == "running" and conn.needs_tasks and conn.id not in self._said_needs_tasks:
            self._said_needs_tasks.add(conn.id)
            n = len(conn.needs_tasks)
            self._warnings.append(f"MCP server {conn.id}: {n} tool{'s' if n != 1 else ''} need{'s' if n == 1 else ''} task "
                                  f"support zeph does not have yet ({', '.join(conn.needs_tasks)}); not offered")

    # ---- status and prompts ------------------------------------------------------

    def status(self) -> list[ServerStatus]:
        self._check_all()
        return [
            ServerStatus(c.id, c.entry.transport, c.state, c.reason,
                         [t.name for t in c.tools if not c.entry.tool_allowlist or t.name in c.entry.tool_allowlist],
                         c.log_path)
            for c in self.connections.values()
        ]

    async def list_prompts(self) -> list[tuple[str, ListedPrompt]]:
        """The running servers' prompts (`start()` first, for the others)."""
        return [(c.id, p) for c in self.connections.values() if c.state == "running" for p in c.prompts]

    async def get_prompt(self, server_id: str, name: str, arguments: Mapping[str, str]) -> list[tuple[str, str]]:
        """The prompt's messages as (role, text), roles as the server gave them; `PromptError` (one line) for an
        unknown server or prompt, a missing required argument or a failed request."""
        conn = self.connections.get(server_id)
        if conn is None:
            known = ", ".join(self.connections) or "none configured"
            raise PromptError(f"there is no MCP server {server_id!r} (servers: {known})")
        conn = await self._need(server_id)
        if conn.state != "running":
            why = f": {conn.reason}" if conn.reason else ""
            raise PromptError(f"MCP server {server_id} is {conn.state}{why}")
        prompt = next((p for p in conn.prompts if p.name == name), None)
        if prompt is None:
            known = ", ".join(p.name for p in conn.prompts) or "none"
            raise PromptError(f"MCP server {server_id} has no prompt {name!r} (prompts: {known})")
        missing = [a for a, required, _ in prompt.arguments if required and a not in arguments]
        if missing:
            raise PromptError(f"prompt {server_id} {name} needs the argument(s) {', '.join(missing)} (as NAME=value)")
        try:
            result = await conn.get_prompt(name, dict(arguments))
        except ServerError as exc:
            raise PromptError(str(exc)) from None
        return prompt_messages(result)

    # ---- resources ---------------------------------------------------------------

    def offers_resources(self) -> bool:
        """Whether a running server has resources to offer (then mcp_list_resources and mcp_read_resource are
        offered): it declared them and listed some, or templates."""
        return any(self.connections[i].lists_resources for i in self.resource_servers())

    def trusts(self, server_id: str) -> bool:
        """Whether the server is `trusted` (its tools, and reads of its resources, run without asking)."""
        conn = self.connections.get(server_id)
        return conn is not None and conn.entry.trusted

    def resource_servers(self) -> list[str]:
        """The running servers that declared resources, in config order."""
        self._check_all()
        return [c.id for c in self.connections.values()
                if c.has_resources and (c.state == "running" or c.id in self._listed)]

    def resource_uris(self, server_id: str) -> list[str]:
        """The URIs `server_id` listed when last asked (none before): what `@server:` completes to."""
        conn = self.connections.get(server_id)
        return [r.uri for r in conn.resources] if conn is not None else []

    async def _resource_connection(self, server_id: str) -> ServerConnection:
        """The server, running: one known from a listing kept before is started first (as a tool call does)."""
        conn = self.connections.get(server_id)
        if conn is None:
            known = ", ".join(self.connections) or "none configured"
            raise ResourceError(f"there is no MCP server {server_id!r} (servers: {known})")
        self._check(conn)
        if conn.state != "running" and conn.has_resources and server_id in self._listed:
            conn = await self._need(server_id)
        if conn.state != "running":
            why = f": {conn.reason}" if conn.reason else ""
            raise ResourceError(f"MCP server {server_id} is not running ({conn.state}){why}")
        if not conn.has_resources:
            others = ", ".join(self.resource_servers()) or "none"
            raise ResourceError(f"MCP server {server_id} offers no resources (servers with resources: {others})")
        return conn

    async def list_resources(self, server_id: str | None = None) -> list[ResourceListing]:
        """Every page of the resources and templates of `server_id` (`ResourceError` when it has none to list),
        or of every server with resources (one that fails says why in its listing). A server not running whose
        kept listing has them is answered from it, without starting it."""
        if server_id is not None:
            return [await self._resource_listing(server_id, strict=True)]
        return list(await asyncio.gather(*(self._resource_listing(i, strict=False) for i in self.resource_servers())))

    async def _resource_listing(self, server_id: str, *, strict: bool) -> ResourceListing:
        conn = self.connections.get(server_id)
        if conn is not None and conn.state != "running" and conn.resources_listed and conn.has_resources \
                and server_id in self._listed:
            return ResourceListing(conn.id, conn.resources, conn.resource_templates)  # kept from its last run
        try:
            conn = await self._resource_connection(server_id)
            await conn.list_resources()
        except (ResourceError, ServerError) as exc:
            if strict:
                raise ResourceError(str(exc)) from None
            return ResourceListing(server_id, [], [], str(exc))
        return ResourceListing(conn.id, conn.resources, conn.resource_templates)

    async def read_resource(self, server_id: str, uri: str) -> tuple[str, list[ImagePart]]:
        """The resource's text (its parts each under a header line when there are several, other blobs as one
        line) and its images; `ResourceError` (one line) for an unknown server or URI or a failed read."""
        conn = await self._resource_connection(server_id)
        if not uri.strip():
            raise ResourceError(f"MCP server {server_id}: no resource URI given")
        try:
            result = await conn.read_resource(uri)
        except ServerError as exc:
            raise ResourceError(str(exc)) from None
        contents = list(getattr(result, "contents", None) or [])
        if not contents:
            raise ResourceError(f"MCP server {server_id} gave nothing for {uri}")
        return contents_parts(contents)
