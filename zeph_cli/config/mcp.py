"""The `[mcp]` section: `[[mcp.servers]]` entries and `[mcp.tool_discovery]`.

Invariant: an entry reaches `Config` only when it is valid — an `id` of
letters, digits, `-` and `_`, unique, and exactly one transport (`command`
for stdio or `url` for streamable HTTP); `env` and `headers` are tables of
strings. `${VAR}` references in them are kept as written here and expanded
only when the server starts, so a config never stores a secret it read.
"""

from __future__ import annotations

import dataclasses
import re
from dataclasses import dataclass, field
from typing import Any

from .keys import check_value, iter_keys, setting, suggest
from ..errors import ConfigError

SERVER_ID = re.compile(r"[A-Za-z0-9_-]{1,32}")
DISCOVERY_STRATEGIES = ("embedding", "none")
# The protocol's log levels, least severe first (RFC 5424 severities).
LOG_LEVELS = ("debug", "info", "notice", "warning", "error", "critical", "alert", "emergency")


@dataclass
class McpServerEntry:
    """One `[[mcp.servers]]` entry."""

    id: str = setting("", "Server name: letters, digits, - and _ (at most 32); its tools are offered as ID__TOOL.")
    command: str = setting("", "Executable to start the server over stdio (with args and env).")
    args: tuple[str, ...] = setting((), "Arguments of command.", kind=tuple)
    url: str = setting("", "Streamable HTTP endpoint, instead of command (may name ${VAR}s, expanded at start).")
    timeout: float = setting(30.0, "Seconds to start the server and list its tools, and for a tool call to go without an answer "
                                   "or a progress update.", lo=1.0, hi=3600.0, kind=float)
    max_timeout: float = setting(600.0, "Seconds a tool call may run in all, however often it reports progress (at least timeout).",
                                 lo=1.0, hi=86400.0, kind=float)
    log_level: str = setting("warning", "The least severe of the server's log messages it is asked to send (written to mcp/ID.log; "
                                        "warning and above are also shown).", choices=LOG_LEVELS)
    tool_allowlist: tuple[str, ...] = setting((), "Only these tools of the server are offered (empty = all).", kind=tuple)
    trusted: bool = setting(False, "Run this server's tools without asking (tools.deny rules still apply).")
    enabled: bool = setting(True, "Set false to keep the entry but not start the server.")
    # Tables of strings; values may name environment variables as ${VAR}, expanded when the server starts.
    env: dict[str, str] = field(default_factory=dict, metadata={"doc": "Extra environment of a stdio server."})
    headers: dict[str, str] = field(default_factory=dict, metadata={"doc": "HTTP headers of a url server."})

    @property
    def transport(self) -> str:
        return "stdio" if self.command else "http"


@dataclass
class ToolDiscoveryConfig:
    """[mcp.tool_discovery]: which MCP tools a turn is offered when there are many."""
    strategy: str = setting(
        "embedding",
        "embedding: offer the MCP tools most relevant to the message when there are many; none: offer them all.",
        choices=DISCOVERY_STRATEGIES,
    )
    top_k: int = setting(10, "MCP tools offered per turn when discovery filters.", lo=1, hi=1000)
    min_similarity: float = setting(0.2, "Minimum similarity of a tool to the message to be offered.", lo=0.0, hi=1.0)
    always_include: tuple[str, ...] = setting((), "MCP tools (ID__TOOL) always offered, whatever the message.", kind=tuple)
    min_tools_to_filter: int = setting(16, "Below this many MCP tools, all are offered.", lo=1, hi=100_000)


@dataclass
class McpConfig:
    """The [mcp] section: the servers and how their tools are offered."""
    tool_discovery: ToolDiscoveryConfig = field(default_factory=ToolDiscoveryConfig)
    servers: list[McpServerEntry] = field(default_factory=list, metadata={"doc": "MCP servers ([[mcp.servers]])."})


SERVER_KEYS = {k.path: k for k in iter_keys(McpServerEntry)}
SERVER_TABLES = ("env", "headers")


def parse_servers(raw: Any, where: str, warnings: list[str]) -> list[McpServerEntry]:
    """`[[mcp.servers]]` as entries; raises `ConfigError` naming the entry and key at fault."""
    if not isinstance(raw, list):
        raise ConfigError(f"{where}: mcp.servers must be an array of tables ([[mcp.servers]])")
    entries = [_server(value, where, f"mcp.servers[{i}]", warnings) for i, value in enumerate(raw)]
    ids = [e.id for e in entries]
    for entry in entries:
        if ids.count(entry.id) > 1:
            raise ConfigError(f"{where}: mcp.servers has two entries with id {entry.id!r}")
    return entries


def _server(raw: Any, where: str, label: str, warnings: list[str]) -> McpServerEntry:
    if not isinstance(raw, dict):
        raise ConfigError(f"{where}: {label} must be a table, got {raw!r}")
    values: dict[str, Any] = {}
    for name, value in raw.items():
        if name in SERVER_TABLES:
            values[name] = _string_table(value, where, f"{label}.{name}")
            continue
        key = SERVER_KEYS.get(name)
        if key is None:
            warnings.append(f"{where}: unknown key {label}.{name}{suggest(name, (*SERVER_KEYS, *SERVER_TABLES))}")
            continue
        values[name] = check_value(dataclasses.replace(key, path=f"{label}.{name}"), value, where)
    entry = McpServerEntry(**values)
    if not SERVER_ID.fullmatch(entry.id):
        raise ConfigError(
            f"{where}: {label}.id = {entry.id!r} is not valid: expected 1-32 letters, digits, - or _"
            if entry.id
            else f"{where}: {label}.id is required"
        )
    if bool(entry.command) == bool(entry.url):
        raise ConfigError(
            f"{where}: {label} ({entry.id}) needs exactly one of command (stdio) or url (streamable HTTP)"
        )
    if "max_timeout" in values and entry.max_timeout < entry.timeout:
        raise ConfigError(f"{where}: {label}.max_timeout = {entry.max_timeout:g} is less than its timeout = {entry.timeout:g}: "
                          f"max_timeout is the cap on a whole call, timeout the wait between progress updates")
    if entry.url and not re.match(r"https?://", entry.url):
        raise ConfigError(f"{where}: {label}.url = {entry.url!r} is not valid: expected an http:// or https:// URL")
    if entry.command and entry.headers:
        warnings.append(f"{where}: {label}.headers apply to url servers only; they are ignored for {entry.id}")
    if entry.url and (entry.env or entry.args):
        warnings.append(f"{where}: {label}.env and args apply to command servers only; they are ignored for {entry.id}")
    return entry


def _string_table(value: Any, where: str, label: str) -> dict[str, str]:
    if not isinstance(value, dict) or not all(isinstance(v, str) for v in value.values()):
        raise ConfigError(f"{where}: {label} must be a table of strings, e.g. {label.rsplit('.', 1)[-1]} = {{ NAME = \"value\" }}")
    return dict(value)
