"""MCP servers (official `mcp` SDK): started when a turn needs tools, their tools offered as
namespaced tools under the same permission policy as built-in ones, their prompts listed.

Invariant: the `mcp` SDK is imported only inside functions that start or talk to a server, so
`zeph --help` and a `zeph ask` without `[[mcp.servers]]` never load it.
"""

from .. import ChatCommand, CommandGroup, Feature
from ...context.blocks import Registration


def _on(session) -> bool:
    return session.extras.mcp is not None


FEATURE = Feature(
    "mcp",
    sources=(Registration(f"{__name__}.source", "McpSource", _on),),
    command_group=CommandGroup("mcp", f"{__name__}.commands", "mcp_app"),
    chat_commands=(
        ChatCommand("mcp", "[SERVER PROMPT [NAME=value ...]]", "List the MCP prompts, or put one into the input box.",
                    (f"{__name__}.chat_commands", "mcp_command"), background=True),
    ),
)
