"""A small MCP server over stdio that crashes on demand, for the restart and cache tests.

Run as `python tests/fakes/mcp_crashy.py STATE_DIR` (the SDK's MCPServer over stdio). Each start appends
`started PID TIME` to STATE_DIR/starts (and each crash `crashed TIME` to STATE_DIR/crashes), so a test can tell whether (and how often) zeph started it. Its tools
are `echo` and `crash`, plus the names listed one per line in STATE_DIR/more_tools if that file exists
(each answers its own name), so its list can change without its configuration changing. `crash(status)`
writes `crashy: giving up with status N` to stderr (its last log line) and exits the process with that
status in the middle of the call.
"""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path


def main(state: Path) -> None:
    from mcp.server.mcpserver import MCPServer

    state.mkdir(parents=True, exist_ok=True)
    with open(state / "starts", "a", encoding="utf-8") as starts:
        starts.write(f"started {os.getpid()} {time.time()}\n")
    server = MCPServer("crashy", version="1.0")

    @server.tool()
    def echo(text: str) -> str:
        """Echo the text back."""
        return f"echo: {text}"

    @server.tool()
    def crash(status: int = 3) -> str:
        """Exit the server's process with `status`, in the middle of the call."""
        with open(state / "crashes", "a", encoding="utf-8") as crashes:
            crashes.write(f"crashed {time.time()}\n")
        print(f"crashy: giving up with status {status}", file=sys.stderr, flush=True)
        os._exit(status)

    more = state / "more_tools"
    for name in more.read_text().split() if more.exists() else []:
        server.add_tool(lambda name=name: name, name=name, description=f"The tool {name}.")

    server.run("stdio")


if __name__ == "__main__":
    main(Path(sys.argv[1]))
