"""MCP servers (official `mcp` SDK): their tools offered as namespaced tools under the same permission
policy as built-in ones (from the server's cached listing until it runs), their prompts listed; a server
starts when a turn needs it (one never listed), a call needs it, or the chat app opens.

Invariant: the `mcp` SDK is imported only inside functions that start or talk to a server, so
`zeph --help`, a `zeph ask` without `[[mcp.servers]]` and one whose servers' listings are cached and
whose turn calls none of them never load it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ...lazy_names import lazy_names
from ...context.blocks import Registration
from .. import ChatCommand, CommandGroup, Feature, Isolation
from .tool_specs import MCP_LIST_RESOURCES, MCP_READ_RESOURCE

# What the core uses of this feature, imported from its module when first asked for (`feature.name`).
_HOME = {
    "McpManager": "manager",
    "PromptError": "manager",
}
__getattr__, __dir__ = lazy_names(__name__, _HOME)

if TYPE_CHECKING:
    from ...agent.source_host import SourceHost
    from .manager import McpManager as McpManager, PromptError as PromptError


def _on(session: SourceHost) -> bool:
    return session.extras.mcp is not None


def _resources(session: SourceHost) -> bool:
    """mcp_list_resources and mcp_read_resource are offered while a running server has resources to list."""
    mcp = session.extras.mcp
    return mcp is not None and mcp.offers_resources()


FEATURE = Feature(
    "mcp",
    sources=(Registration(f"{__name__}.source", "McpSource", _on),),
    tools=(MCP_LIST_RESOURCES, MCP_READ_RESOURCE),
    tools_offered=_resources,
    command_group=CommandGroup("mcp", f"{__name__}.commands", "mcp_app"),
    chat_commands=(
        ChatCommand("mcp", "[SERVER PROMPT [NAME=value ...] | restart ID]",
                    "List the MCP prompts, use one, or restart a server.",
                    (f"{__name__}.chat_commands", "mcp_command"), background=True),
    ),
    isolation=Isolation(frozenset({"MCP tools"}), frozenset({"MCP tools"}), ("MCP tools",)),
)
