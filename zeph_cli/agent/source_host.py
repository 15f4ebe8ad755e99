"""What a context source reads of the session it serves: the core's settings and prompts (`CoreHost`), and
the features' services and the turn's results they fill in.

Invariant: a protocol the Agent satisfies, so that no source module imports the agent; the source
registry (`sources.py`) does not import this module, so it names no feature.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol

from .sources import CoreHost

if TYPE_CHECKING:
    from ..features.memory.service import MemoryService, TurnMemory
    from ..features.session_memory.service import SessionMemory
    from ..features.turn_extras import TurnExtras
    from ..features.worldbook.turn import Worldbook, WorldbookTurn
    from ..tools.base import ToolSet


class SourceHost(CoreHost, Protocol):
    """The session as the features' sources see it: their services, and `turn_memory`, which recall fills in."""

    memory: MemoryService | None
    turn_memory: TurnMemory
    extras: TurnExtras
    session_memory: SessionMemory
    worldbook: Worldbook
    turn_worldbook: WorldbookTurn

    def memory_chars(self) -> int | None: ...
    def offered_tools(self) -> ToolSet: ...
    @property
    def tools_unavailable(self) -> str | None: ...
