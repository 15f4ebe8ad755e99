"""`zeph mcp`: list the configured MCP servers, their prompts and resources, and render one prompt.

Invariant: presentation only — each command starts the servers it needs through
`McpManager` (imported inside the command, so `zeph --help` never loads the SDK),
stops them before it returns, and ends every bad server, prompt or argument as
one `zeph: error:` line with a non-zero exit.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import TYPE_CHECKING, Optional

import typer

from ...errors import UsageError, ZephError
from ...frontends.cli.stderr import eprint

if TYPE_CHECKING:
    from .manager import McpManager

mcp_app = typer.Typer(help="MCP servers: their state, tools, prompts and resources.", no_args_is_help=True)


def _manager(only: str | None = None) -> "McpManager":
    from ...frontends.cli.command_context import load
    from .manager import McpManager
    from ...tools.confinement import workspace_root

    config = load().config
    if only is not None:
        known = [e.id for e in config.mcp.servers]
        if only not in known:
            raise ZephError(f"there is no MCP server {only!r} (servers: {', '.join(known) or 'none configured'})")
        config.mcp.servers = [e for e in config.mcp.servers if e.id == only]
    return McpManager.from_config(config, os.environ, workspace_root(Path.cwd()))


async def _started(manager: "McpManager", *, quiet: bool = False) -> list[str]:
    notes = await manager.start()
    if not quiet:
        for note in notes:
            eprint(f"zeph: warning: {note}")
    return notes


@mcp_app.command("list")
def mcp_list(as_json: bool = typer.Option(False, "--json", help="A JSON array, one object per server.")) -> None:
    """Start every enabled server and show its state and tools.

    Why a server failed, and its tools after tool_allowlist.
    """

    async def run():
        manager = _manager()
        try:
            await _started(manager, quiet=True)  # failures are in the listing
            manager.tools()  # checks each tool_allowlist against what its server offers
            for warning in manager.take_warnings():
                eprint(f"zeph: warning: {warning}")
            return manager.status()
        finally:
            await manager.aclose()

    import asyncio  # (asyncio loads logging: not for --help)

    statuses = asyncio.run(run())
    if as_json:
        print(json.dumps([{"id": s.id, "transport": s.transport, "state": s.state, "reason": s.reason,
                           "tools": s.tools, "log": str(s.log_path) if s.log_path else None} for s in statuses],
                         indent=2))
        return
    if not statuses:
        print("no MCP servers configured (add [[mcp.servers]] to the config)")
        return
    for s in statuses:
        reason = f" ({s.reason})" if s.reason else ""
        print(f"{s.id}\t{s.transport}\t{s.state}{reason}")
        if s.tools:
            print("  tools: " + ", ".join(s.tools))
        if s.log_path and s.state == "failed":
            print(f"  log: {s.log_path}")


@mcp_app.command("prompts")
def mcp_prompts() -> None:
    """List the running servers' prompts and their arguments.

    Server, prompt and arguments (* = required).
    """

    async def run():
        manager = _manager()
        try:
            await _started(manager)
            return await manager.list_prompts()
        finally:
            await manager.aclose()

    import asyncio

    prompts = asyncio.run(run())
    if not prompts:
        print("no MCP prompts")
    for server, prompt in prompts:
        arguments = " ".join(f"{name}{'*' if required else ''}" for name, required, _ in prompt.arguments)
        description = f"\t{prompt.description}" if prompt.description else ""
        print(f"{server}\t{prompt.name}\t{arguments}{description}")


@mcp_app.command("prompt")
def mcp_prompt(
    server: str = typer.Argument(..., metavar="SERVER", help="Server id."),
    name: str = typer.Argument(..., metavar="NAME", help="Prompt name."),
    arguments: Optional[list[str]] = typer.Argument(None, metavar="NAME=VALUE...", help="Prompt arguments as NAME=value."),
) -> None:
    """Print a prompt as its server renders it.

    Pipe it into `zeph ask` to send it. A prompt with assistant messages is printed with a `## role` header
    before each message.
    """
    values = parse_arguments(arguments or [])

    async def run() -> list[tuple[str, str]]:
        from .manager import PromptError

        manager = _manager(only=server)
        try:
            notes = await _started(manager, quiet=True)
            if notes:
                raise ZephError(notes[0])
            try:
                return await manager.get_prompt(server, name, values)
            except PromptError as exc:
                raise ZephError(str(exc)) from None
        finally:
            await manager.aclose()

    import asyncio

    from .prompts import prompt_text

    print(prompt_text(asyncio.run(run())))


@mcp_app.command("resources")
def mcp_resources(
    server: Optional[str] = typer.Argument(None, metavar="ID", help="Only this server's resources."),
    as_json: bool = typer.Option(False, "--json", help="A JSON array, one object per server."),
) -> None:
    """List the servers' resources and resource templates.

    Server, URI, name, MIME type and size; templates after a server's resources.
    """

    async def run():
        from .resources import ResourceError

        manager = _manager(only=server)
        try:
            notes = await _started(manager, quiet=server is not None)
            if server is not None and notes:
                raise ZephError(notes[0])
            try:
                return bool(manager.connections), await manager.list_resources(server)
            except ResourceError as exc:
                raise ZephError(str(exc)) from None
        finally:
            await manager.aclose()

    import asyncio

    configured, listings = asyncio.run(run())
    if as_json:
        print(json.dumps([{"server": li.server, "error": li.error or None,
                           "resources": [{"uri": r.uri, "name": r.name, "description": r.description,
                                          "mime_type": r.mime_type or None, "size": r.size} for r in li.resources],
                           "templates": [{"uri_template": t.uri_template, "name": t.name, "description": t.description,
                                          "mime_type": t.mime_type or None} for t in li.templates]}
                          for li in listings], indent=2))
        return
    if not listings:
        print("no MCP resources: no running server offers any" if configured else
              "no MCP servers configured (add [[mcp.servers]] to the config)")
        return
    rows = [("SERVER", "URI", "NAME", "MIME", "SIZE")]
    for li in listings:
        if li.error:
            eprint(f"zeph: warning: {li.error}")
        rows += [(li.server, r.uri, r.name, r.mime_type or "-", f"{r.size:,}" if r.size is not None else "-")
                 for r in li.resources]
        rows += [(li.server, t.uri_template, t.name + " (template)", t.mime_type or "-", "-") for t in li.templates]
    if len(rows) == 1:
        print("no MCP resources: " + ", ".join(li.server for li in listings) + (" lists" if len(listings) == 1 else " list")
              + " none")
        return
    widths = [max(len(row[i]) for row in rows) for i in range(4)]
    for row in rows:
        print("  ".join(cell.ljust(width) for cell, width in zip(row, widths, strict=False)) + "  " + row[4])


def parse_arguments(pairs: list[str]) -> dict[str, str]:
    """`NAME=value` pairs as a dict; anything else is a usage error naming it."""
    values: dict[str, str] = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or not key.strip():
            raise UsageError(f"prompt argument {pair!r} is not NAME=value")
        values[key.strip()] = value
    return values
