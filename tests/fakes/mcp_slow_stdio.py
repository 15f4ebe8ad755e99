"""A small MCP server over stdio whose one tool takes long, and which writes down what became of each call.

`python tests/fakes/mcp_slow_stdio.py RECORD` serves on stdin/stdout (the SDK's server side, not a mock).
Tool `wait(seconds)` appends to the RECORD file `started ID` when a call begins, then `finished ID` when it
ran to its end or `stopped ID` when it was stopped (by a cancel, or the server shutting down). Every
`notifications/cancelled` that arrives on stdin is written down as `cancel ID` the moment it is read, so
the record tells a cancel the client sent from a call cut short by the server's exit.
"""

import json
import sys
import threading
from pathlib import Path
from typing import TextIO

import anyio
from mcp.server.mcpserver import Context, MCPServer
from mcp.server.stdio import stdio_server

_lock = threading.Lock()


def note(record: Path, line: str) -> None:
    with _lock, open(record, "a", encoding="utf-8") as out:
        out.write(line + "\n")


class Tapped:
    """stdin as the SDK reads it, each `notifications/cancelled` written down on the way."""

    def __init__(self, stream: TextIO, record: Path) -> None:
        self.stream = stream
        self.record = record

    def readline(self, *args: int) -> str:
        line = self.stream.readline(*args)
        if "notifications/cancelled" in line:
            try:
                request = json.loads(line)["params"]["requestId"]
            except (ValueError, KeyError, TypeError):
                request = "?"
            note(self.record, f"cancel {request}")
        return line

    def close(self) -> None:
        self.stream.close()


def build_server(record: Path) -> MCPServer:
    server = MCPServer("slow")

    @server.tool()
    async def wait(seconds: float, ctx: Context) -> str:
        """Wait this many seconds, then say so."""
        call = ctx.request_id
        note(record, f"started {call}")
        try:
            await anyio.sleep(seconds)
        except anyio.get_cancelled_exc_class():
            note(record, f"stopped {call}")
            raise
        note(record, f"finished {call}")
        return f"waited {seconds:g} s"

    return server


async def serve(record: Path) -> None:
    server = build_server(record)
    lowlevel = server._lowlevel_server
    async with stdio_server(stdin=anyio.wrap_file(Tapped(sys.stdin, record))) as (read, write):  # type: ignore[arg-type]
        await lowlevel.run(read, write, lowlevel.create_initialization_options())


if __name__ == "__main__":
    anyio.run(serve, Path(sys.argv[1]))
