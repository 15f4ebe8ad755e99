"""Memory across sessions: embedders, vector indexes, recall of past messages and long-term memories.

Invariant: nothing here is imported by `zeph --help`, and numpy, wordllama's
files and qdrant-client are imported only by the code paths that need them.
"""

from .. import ChatCommand, CommandGroup, Feature
from ...context.blocks import Registration
from .tool_specs import MEMORY_SAVE, MEMORY_SEARCH


def _on(session) -> bool:
    return session.memory is not None


def _tools_on(session) -> bool:
    return session.config.memory.long_term.enabled


FEATURE = Feature(
    "memory",
    sources=(Registration(f"{__name__}.source", "MemorySource", _on),),
    tools=(MEMORY_SAVE, MEMORY_SEARCH),
    tools_offered=_tools_on,
    command_group=CommandGroup("memory", f"{__name__}.commands", "memory_app"),
    chat_commands=(
        ChatCommand("memory", "[add TEXT|forget ID]", "List the memories seen here, save one, or forget one.",
                    (f"{__name__}.chat_commands", "memory_command"), check="memory_problem"),
    ),
)
