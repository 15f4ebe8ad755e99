"""All configured MCP servers of one agent: started together, their tools and prompts, closed together.

Invariant: servers start only in `start()` (concurrently, each within its own
timeout) and stop only in `aclose()`; a server that fails to start or dies later
is reported once by name and the rest go on. `tools()` offers only running
servers' tools that pass their `tool_allowlist`, under `ID__TOOL` names.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ...config.mcp import McpServerEntry, ToolDiscoveryConfig
from ...paths import mcp_log_dir
from .connection import ListedPrompt, ProgressReport, ServerConnection, ServerError
from .hooks import ServerHooks
from .discovery import EmbedderSource, ToolDiscovery
from .names import ToolNames
from .prompts import prompt_messages
from .resources import ImageContent, ResourceError, ResourceListing, contents_parts
from .server_log import LogNotices
from .tools import McpTool

if TYPE_CHECKING:
    from ...config import Config


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


class McpManager:
    def __init__(self, entries: Sequence[McpServerEntry], *, env: Mapping[str, str], cwd: Path, log_dir: Path,
                 discovery: ToolDiscoveryConfig | None = None, embedder: EmbedderSource = None) -> None:
        self.hooks = ServerHooks(roots=lambda: [cwd])
        self.connections = {e.id: ServerConnection(e, env, cwd, log_dir, self.hooks) for e in entries}
        self.discovery = ToolDiscovery(discovery or ToolDiscoveryConfig(), embedder)
        self.names = ToolNames()
        self._tools: dict[str, list[McpTool]] = {}
        self._warnings: list[str] = []
        self._reported: set[str] = set()  # servers whose failure was said
        self._closed = False
        # What servers report (their log messages, changed lists): see "what the servers report" below.
        self.log_notices = LogNotices()
        self._said_needs_tasks: set[str] = set()
        self.hooks.on_log = self.log_notices.add
        self.hooks.on_change = self._listed_again

    @classmethod
    def from_config(cls, config: Config, env: Mapping[str, str], cwd: Path, embedder: EmbedderSource = None) -> McpManager:
        return cls(config.mcp.servers, env=env, cwd=cwd, log_dir=mcp_log_dir(env),
                   discovery=config.mcp.tool_discovery, embedder=embedder)

    # ---- life cycle --------------------------------------------------------------

    async def start(self) -> list[str]:
        """Start every enabled server at once; one note per server that did not start."""
        pending = [c for c in self.connections.values() if c.state == "not started"]
        await asyncio.gather(*(c.start() for c in pending))
        notes = []
        for conn in pending:
            if conn.state == "failed":
                self._reported.add(conn.id)
                notes.append(f"MCP server {conn.id} did not start: {conn.reason}")
        return notes

    def take_warnings(self) -> list[str]:
        """What went wrong since the last call (a server that stopped, a stale allowlist entry), each once."""
        for conn in self.connections.values():
            if conn.closed_under_us():
                conn.mark_dead("the connection closed")
            if conn.state == "failed" and conn.id not in self._reported and conn.started:
                self._reported.add(conn.id)
                self._warnings.append(f"MCP server {conn.id} stopped: {conn.reason}; its tools are no longer offered")
            self._say_needs_tasks(conn)
        out, self._warnings = self._warnings + self.discovery.take_warnings() + self.log_notices.take(), []
        return out

    async def aclose(self) -> None:
        """Stop every server; bounded, idempotent, never raises."""
        if self._closed:
            return
        self._closed = True
        await asyncio.gather(*(c.close() for c in self.connections.values()), return_exceptions=True)

    # ---- tools -------------------------------------------------------------------

    def tools(self) -> list[McpTool]:
        out: list[McpTool] = []
        for conn in self.connections.values():
            if conn.closed_under_us():
                conn.mark_dead("the connection closed")
            if conn.state != "running":
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

    async def call_tool(self, server_id: str, tool: str, arguments: dict[str, Any], timeout: float,
                        progress: ProgressReport | None = None) -> Any:
        conn = self.connections.get(server_id)
        if conn is None:
            raise ServerError(f"there is no MCP server {server_id!r}")
        return await conn.call_tool(tool, arguments, timeout, progress)

    # ---- what the servers report -------------------------------------------------

    def _listed_again(self, server_id: str, kind: str) -> None:
        """A server's list changed (and was read again): its tools are offered anew from the next request."""
        if kind == "tools":
            self._tools.pop(server_id, None)

    def _say_needs_tasks(self, conn: ServerConnection) -> None:
        """Once per server: the tools it lists that zeph cannot call (they require task augmentation)."""
        if conn.state == "running" and conn.needs_tasks and conn.id not in self._said_needs_tasks:
            self._said_needs_tasks.add(conn.id)
            n = len(conn.needs_tasks)
            self._warnings.append(f"MCP server {conn.id}: {n} tool{'s' if n != 1 else ''} need{'s' if n == 1 else ''} task "
                                  f"support zeph does not have yet ({', '.join(conn.needs_tasks)}); not offered")

    # ---- status and prompts ------------------------------------------------------

    def status(self) -> list[ServerStatus]:
        for conn in self.connections.values():
            if conn.closed_under_us():
                conn.mark_dead("the connection closed")
        return [
            ServerStatus(c.id, c.entry.transport, c.state, c.reason,
                         [t.name for t in c.tools if not c.entry.tool_allowlist or t.name in c.entry.tool_allowlist],
                         c.log_path)
            for c in self.connections.values()
        ]

    async def list_prompts(self) -> list[tuple[str, ListedPrompt]]:
        return [(c.id, p) for c in self.connections.values() if c.state == "running" for p in c.prompts]

    async def get_prompt(self, server_id: str, name: str, arguments: Mapping[str, str]) -> list[tuple[str, str]]:
        """The prompt's messages as (role, text), roles as the server gave them; `PromptError` (one line) for an
        unknown server or prompt, a missing required argument or a failed request."""
        conn = self.connections.get(server_id)
        if conn is None:
            known = ", ".join(self.connections) or "none configured"
            raise PromptError(f"there is no MCP server {server_id!r} (servers: {known})")
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

    def resource_servers(self) -> list[str]:
        """The running servers that declared resources, in config order."""
        return [c.id for c in self.connections.values() if not c.closed_under_us() and c.has_resources]

    def resource_uris(self, server_id: str) -> list[str]:
        """The URIs `server_id` listed when last asked (none before): what `@server:` completes to."""
        conn = self.connections.get(server_id)
        return [r.uri for r in conn.resources] if conn is not None else []

    def _resource_connection(self, server_id: str) -> ServerConnection:
        conn = self.connections.get(server_id)
        if conn is None:
            known = ", ".join(self.connections) or "none configured"
            raise ResourceError(f"there is no MCP server {server_id!r} (servers: {known})")
        if conn.closed_under_us():
            conn.mark_dead("the connection closed")
        if conn.state != "running":
            why = f": {conn.reason}" if conn.reason else ""
            raise ResourceError(f"MCP server {server_id} is {conn.state}{why}")
        if not conn.has_resources:
            others = ", ".join(self.resource_servers()) or "none"
            raise ResourceError(f"MCP server {server_id} offers no resources (servers with resources: {others})")
        return conn

    async def list_resources(self, server_id: str | None = None) -> list[ResourceListing]:
        """Every page of the resources and templates of `server_id` (`ResourceError` when it has none to list),
        or of every running server with resources (one that fails says why in its listing)."""
        if server_id is not None:
            conn = self._resource_connection(server_id)
            try:
                await conn.list_resources()
            except ServerError as exc:
                raise ResourceError(str(exc)) from None
            return [ResourceListing(conn.id, conn.resources, conn.resource_templates)]
        conns = [self.connections[i] for i in self.resource_servers()]
        failed = await asyncio.gather(*(c.list_resources() for c in conns), return_exceptions=True)
        out = []
        for conn, failure in zip(conns, failed, strict=True):
            if isinstance(failure, BaseException) and not isinstance(failure, ServerError):
                raise failure
            out.append(ResourceListing(conn.id, conn.resources, conn.resource_templates,
                                       str(failure) if failure is not None else ""))
        return out

    async def read_resource(self, server_id: str, uri: str) -> tuple[str, list[ImageContent]]:
        """The resource's text (its parts each under a header line when there are several, other blobs as one
        line) and its images; `ResourceError` (one line) for an unknown server or URI or a failed read."""
        conn = self._resource_connection(server_id)
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
