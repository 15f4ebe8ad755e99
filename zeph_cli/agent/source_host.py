"""What a context source reads of the session it serves: the core's settings and prompts (`CoreHost`), and
the features' services and the turn's results they fill in.

Invariant: protocols the Agent satisfies (mypy checks it where the agent builds its sources), so that
no source module imports the agent; the source registry (`sources.py`) imports this module for
types only.
"""

from __future__ import annotations

from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    from ..config import Config
    from ..context.global_prompt import GlobalPrompt
    from ..store import Conversation, ConversationStore
    from .workspace import Workspace
    from ..features.memory.service import MemoryService, TurnMemory
    from ..features.session_memory.service import SessionMemory
    from ..features.turn_extras import TurnExtras
    from ..features.worldbook.turn import Worldbook, WorldbookTurn
    from ..tools.base import ToolSet


class CoreHost(Protocol):
    """What the core's sources read of the session they serve (the Agent is one): its settings, workspace
    and prompts. A feature's sources read more (`SourceHost`)."""

    config: Config
    mode: str
    cwd: Path
    workspace: Workspace | None

    def clock(self) -> datetime: ...
    def global_prompt(self, conversation: Conversation) -> GlobalPrompt: ...
    def enhancement(self, conversation: Conversation) -> str: ...


class SourceHost(CoreHost, Protocol):
    """The session as the features' sources see it: their services, and `turn_memory`, which recall fills in."""

    memory: MemoryService | None
    turn_memory: TurnMemory
    extras: TurnExtras
    session_memory: SessionMemory
    worldbook: Worldbook
    turn_worldbook: WorldbookTurn
    store: ConversationStore  # the session's database (the task list reads its own tables there)

    def memory_chars(self) -> int | None: ...
    def offered_tools(self) -> ToolSet: ...
    @property
    def tools_unavailable(self) -> str | None: ...
