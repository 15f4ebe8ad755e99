"""Memory across sessions: embedders, vector indexes, recall of past messages and long-term memories.

Invariant: nothing here is imported by `zeph --help`, and numpy, wordllama's
files and qdrant-client are imported only by the code paths that need them.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ...lazy_names import lazy_names
from ...context.blocks import Registration
from .. import ChatCommand, CommandGroup, Feature, Isolation
from .tool_specs import MEMORY_SAVE, MEMORY_SEARCH

# What the core uses of this feature, imported from its module when first asked for (`feature.name`).
_HOME = {
    "MemoryStore": "long_term_store",
    "LongTermMemory": "long_term_access",
    "TurnMemory": "service",
    "MemoryService": "service",
    "echoing_replies": "service",
    "memory_lines": "describe",
    "embedder_for": "embedders.select",
}
__getattr__, __dir__ = lazy_names(__name__, _HOME)

if TYPE_CHECKING:
    from ...agent.source_host import SourceHost
    from .long_term_store import MemoryStore as MemoryStore
    from .long_term_access import LongTermMemory as LongTermMemory
    from .service import TurnMemory as TurnMemory
    from .describe import memory_lines as memory_lines
    from .embedders.select import embedder_for as embedder_for
    from .service import MemoryService as MemoryService, echoing_replies as echoing_replies


def _on(session: SourceHost) -> bool:
    return session.memory is not None


def _tools_on(session: SourceHost) -> bool:
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
    isolation=Isolation(frozenset({"memory"}), frozenset({"memory tools"}),
                        ("long-term memory", "semantic recall", "memory tools")),
)
