"""Blocks: the parts of a request's context, as values, and the sources that prepare them.

Invariant: pure values. A `Block` says everything the assembler needs to place it and fit it
within the budget — where it goes (`Placement`), in which order, which allocation slot or share
of the budget it may take, how it shrinks when room is short (`Shrink`), whether it stays the same
from one turn to the next (cache-stable) and what the report says beside it — so the assembler
places and fits blocks by these fields alone and knows no source by name. A block whose size
depends on the room left (recall, skills) holds `Entries`, which render themselves within a
`Room`; every other block holds its text. A `ContextSource` prepares a turn's blocks; the
registry and the preparation that runs sources live outside `context/`, which does no I/O.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass, field
from collections.abc import Callable, Mapping, Sequence
from datetime import datetime
from typing import TYPE_CHECKING, Any, NamedTuple, Protocol

if TYPE_CHECKING:
    from ..tokens import TokenCounter
    from ..messages import Message
    from .report import ContextReport



@dataclass(frozen=True)
class HistoryItem:
    """One stored message as context logic sees it."""

    message: Message
    tokens: int  # raw estimate, before calibration
    id: int = 0  # the store's message id (0 = not stored)
    metadata: Mapping[str, Any] = field(default_factory=dict)
    created_at: str = ""  # the store's ISO 8601 timestamp ("" = unknown)


class Placement(enum.Enum):
    """Where a block goes in the request, in the order the request carries them."""

    SYSTEM = "system layer"  # a system message: the cached prompt
    CONTEXT = "context after the system layers"  # a `context` message before the history: cached with the prompt
    DEPTH = "at depth in history"  # a `context` message `depth` messages from the end of the history sent
    BEFORE_TURN = "just before the user message"  # a `context` message before the running turn: per-turn material
    CLOSING = "closing"  # a `context` message after everything else: the request's last
    REPORT = "report only"  # sent nowhere: a 0-token row of the report saying what was left out and why


class Shrink(enum.Enum):
    """What happens to a block when room is short."""

    NONE = "sent whole"  # sized by its source; the history makes room for it
    ENTRIES = "drops whole entries"  # `Entries` keep those that fit, best first
    COMPACT = "compact form"  # `Entries` go to a compact form, then drop whole entries
    TRUNCATE = "truncated"  # the text is cut to its allowance
    DROP = "dropped"  # left out whole when over its allowance


class Room(NamedTuple):
    """What a block that shrinks is given to fit in."""

    allowance: int  # calibrated tokens it may take, its message framing included
    remaining: int | None  # what the budget leaves after every other block and the history (None = no budget)
    measure: Callable[[str], int]  # calibrated tokens of a text sent as one message
    tools: frozenset[str] = frozenset()  # the tools the request offers, by name


class Fitted(NamedTuple):
    """What a block's entries became within their room: the text sent ("" = nothing), the report's
    detail, and what went in (ids or (name, form) pairs: the report's account of it)."""

    text: str = ""
    detail: str = ""
    kept: tuple[Any, ...] = ()


class Entries(Protocol):
    """A block's content that renders itself within a room (whole entries, compact forms)."""

    def fit(self, room: Room) -> Fitted: ...


class Block(NamedTuple):
    """One named part of a request's context (see the module's invariant).

    `share` (of the prompt budget) and `slot` (of the allocation table) are the two ways a block's
    room is set: a share is sized before the history, which makes room for it; a slot takes at most
    its slot's tokens and only room nothing else uses, so it never trims the history. `cap` is the
    allowance either gets when there is no budget to take a share of. Without a share or a slot,
    `TRUNCATE` and `DROP` apply to `cap` tokens (0 = no cap)."""

    name: str
    content: str | Entries = ""
    placement: Placement = Placement.SYSTEM
    order: int = 0  # within its placement, lowest first (ties keep the sources' order)
    depth: int = 0  # for `Placement.DEPTH`: messages from the end of the history
    share: float = 0.0
    slot: str = ""
    cap: int = 0
    shrink: Shrink = Shrink.NONE
    stable: bool = True  # the same from one turn to the next: part of a cacheable prefix
    detail: str = ""  # shown beside the block in the report
    slot_share: float = 0.0  # for a slot block: its slot's share of the allocation in place of the table's (0 = the table's)

    @property
    def text(self) -> str:
        """Its text when it holds text ("" for entries, which the assembler fits)."""
        return self.content if isinstance(self.content, str) else ""

    @property
    def fits_room(self) -> bool:
        """Its size is set by the room it is given (a share or a slot), not by its source."""
        return bool(self.share or self.slot)


class TurnInput(NamedTuple):
    """What a source may read to prepare a turn's blocks, or one request's (`running` False: a preview
    of the next request, outside a turn, as `zeph context` shows it)."""

    conversation_id: int
    metadata: Mapping[str, Any]
    conversation: Any = None  # the store's conversation, for sources that read it
    history: Sequence[HistoryItem] = ()
    prompt: str = ""  # the running turn's user message ("" outside a turn)
    running: bool = False
    system: str | None = None  # the topic prompt asked for this turn (None: the session's own)
    available: int = 0  # tokens the prompt may use (0 = no budget)
    counter: TokenCounter | None = None
    measure: Callable[[str], int] = len  # calibrated tokens of a text sent as one message
    tools: frozenset[str] = frozenset()  # the tools the request offers, by name
    now: datetime | None = None


class ContextSource(Protocol):
    """Something that contributes blocks to a turn's context.

    `prepare` gathers what the turn needs (it may be slow: I/O, embeddings) once a turn, concurrently
    with the other sources and under a deadline, and returns the blocks it makes; `blocks` gives them
    again for each request of the turn (and for a preview outside a turn) from what was gathered, since
    a request's offered tools and counts may differ from the turn's first; `lines` says, for
    `zeph context`, what the source did beyond its blocks' rows (what it matched, why it sent nothing)."""

    name: str

    async def prepare(self, turn: TurnInput) -> list[Block]: ...

    def blocks(self, turn: TurnInput) -> list[Block]: ...

    def lines(self, report: ContextReport) -> list[str]: ...


class Source:
    """A source with nothing slow to gather: `prepare` gives what `blocks` gives; no lines of its own."""

    name = ""

    async def prepare(self, turn: TurnInput) -> list[Block]:
        return self.blocks(turn)

    def blocks(self, turn: TurnInput) -> list[Block]:
        raise NotImplementedError

    def lines(self, report: ContextReport) -> list[str]:
        return []


# Where each block goes among those of its placement (lowest first): the order the request has always had.
SYSTEM_ORDER = {"worldbook before": 0, "base prompt": 10, "environment": 20, "project context": 30, "mode prompt": 40,
                "global prompt": 50, "topic prompt": 60, "worldbook after": 70, "skills": 80}
TURN_ORDER = {"worldbook an_top": 10, "time": 20, "memory": 30, "recent conversations": 40, "user profile": 50,
              "worldbook outlet": 60, "repo map": 62, "code context": 64, "semantic recall": 70,
              "worldbook an_bottom": 80, "todo": 90}
CLOSING_ORDER = {"enhancement prompt": 10}


def always(host: Any) -> bool:
    """A registration that is always on."""
    return True


class Registration(NamedTuple):
    """A context source: `factory` (in `module`, by full dotted name, imported only when `enabled(session)`)
    builds it for a session."""

    module: str
    factory: str
    enabled: Callable[[Any], bool] = always


class SourcePolicy(NamedTuple):
    """Which sources and tool groups a session allows: everything but what it names."""

    denied_sources: frozenset[str] = frozenset()
    denied_tools: frozenset[str] = frozenset()  # tool groups (`Tool.group`): "memory tools", "MCP tools"
    says: tuple[str, ...] = ()  # what it leaves out, in the words `zeph context` shows

    def allows(self, source: str) -> bool:
        return source not in self.denied_sources

    def allows_tools(self, group: str) -> bool:
        return group not in self.denied_tools


OPEN = SourcePolicy()
