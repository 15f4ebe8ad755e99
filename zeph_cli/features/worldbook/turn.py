"""The worldbook as one turn sees it: the entries in force here, which of them the recent messages
trigger, and whether the session runs in isolation mode.

Invariant: read-only; what applies to a session is the enabled entries bound to its project
(the workspace root) and to the session itself. Isolation is on only when the session asks for it
(`worldbook_isolated` in its metadata) AND it has entries in force: then the session's source
policy (`features.isolation_policy()`) leaves out the sources and tools it names (its `says`). A
broken entry is skipped with a warning, never an error.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from ...store.sqlite import Database

from ...config import WorldbookConfig
from ...context.assembler import PromptLayer
from ...context.report import ContextBlock, ContextReport
from ...messages import Message
from ...tokens import MESSAGE_OVERHEAD, Calibration, TokenCounter
from .store import ISOLATED_KEY, WorldbookRecord, WorldbookStore

if TYPE_CHECKING:  # the entries' module loads when a place has entries in force
    from ...context.worldbook_block import WorldbookEntry, WorldbookPlacement

ISOLATION_BLOCK = "worldbook isolation"  # a 0-token report block saying what isolation left out


def entry_of(record: WorldbookRecord) -> WorldbookEntry:
    from ...context.worldbook_block import WorldbookEntry

    return WorldbookEntry(
        record.id, record.content, record.keywords, record.regex, record.case_sensitive, record.position,
        record.depth, record.order,
    )


@dataclass(frozen=True)
class WorldbookTurn:
    """The worldbook entries in force for a turn, those its messages triggered, and isolation."""
    in_force: tuple[WorldbookEntry, ...] = ()
    triggered: tuple[WorldbookEntry, ...] = ()
    isolated: bool = False  # isolation asked for and entries bound: what its policy denies is not sent
    isolation_asked: bool = False  # the session's switch, whether or not entries are bound
    warnings: tuple[str, ...] = field(default_factory=tuple)

    def placement(self, allowance: int | None, measure: Callable[[str], int]) -> WorldbookPlacement:
        from ...context.worldbook_block import place

        return place(self.triggered, allowance, measure)

    def isolation_detail(self) -> str:
        from .. import isolation_policy

        return "on: not sent: " + ", ".join(isolation_policy().says)


def is_isolated(metadata: dict) -> bool:
    return bool(metadata.get(ISOLATED_KEY))


class Worldbook:
    """Reads the entries in force for a place; one per agent."""

    def __init__(self, db: Database, config: WorldbookConfig, project_root: str) -> None:
        self.db = db
        self.config = config
        self.project_root = project_root

    def for_turn(self, conversation_id: int | None, metadata: dict, history: Sequence[Message]) -> WorldbookTurn:
        if not self.config.enabled:
            return WorldbookTurn()
        records = WorldbookStore(self.db).in_force(self.project_root, conversation_id)
        asked = is_isolated(metadata)
        if not records:
            return WorldbookTurn(isolation_asked=asked)
        from ...context.worldbook_block import scan_text, triggered

        entries = tuple(entry_of(r) for r in records)
        on, warnings = triggered(entries, scan_text(history, self.config.scan_depth))
        return WorldbookTurn(entries, tuple(on), asked and bool(entries), asked, tuple(warnings))

    def allowance(self, available: int) -> int | None:
        """Tokens the worldbook blocks may take together (None = no budget to take a share of)."""
        return int(available * self.config.max_share) if available else None


@dataclass(frozen=True)
class WorldbookLayers:
    """A turn's worldbook blocks as the assembler takes them, by where they go."""

    before: list[PromptLayer] = field(default_factory=list)
    after: list[PromptLayer] = field(default_factory=list)
    an_top: list[PromptLayer] = field(default_factory=list)
    outlet: list[PromptLayer] = field(default_factory=list)
    an_bottom: list[PromptLayer] = field(default_factory=list)
    depths: list[tuple[int, PromptLayer]] = field(default_factory=list)
    notes: list[ContextBlock] = field(default_factory=list)  # 0-token blocks: isolation, entries left out
    changing: set[str] = field(default_factory=set)  # layers where an entry fires by its keywords: not cache-stable

    def annotate(self, report: ContextReport) -> ContextReport:
        """The report with the 0-token blocks that say isolation is on (and what it left out) or that no
        triggered entry fit the worldbook share."""
        return dataclasses.replace(report, blocks=(*report.blocks, *self.notes)) if self.notes else report


def worldbook_layers(
    turn: WorldbookTurn, allowance: int | None, counter: TokenCounter, calibration: Calibration
) -> WorldbookLayers:
    """The triggered entries that fit `allowance` (calibrated tokens, None = no cap) as prompt layers;
    each block's detail names its entries, the first one's also what was left out."""
    return layers_within(turn, allowance, lambda text: calibration.apply(counter.count(text) + MESSAGE_OVERHEAD))


def layers_within(turn: WorldbookTurn, allowance: int | None, measure: Callable[[str], int]) -> WorldbookLayers:
    """`worldbook_layers` with `measure` giving a block's calibrated tokens as sent."""
    layers = WorldbookLayers()
    if not turn.triggered and not turn.isolated:
        return layers  # nothing to place and nothing to say
    placement = turn.placement(allowance, measure)
    keyed = {entry.position for entry in turn.in_force if not entry.constant}  # these layers change with the messages
    if turn.isolated:
        layers.notes.append(ContextBlock(ISOLATION_BLOCK, 0, turn.isolation_detail()))
    for n, block in enumerate(placement.blocks):
        detail = "; ".join(filter(None, (block.detail, placement.detail if n == 0 else "")))
        layer = PromptLayer(block.name, block.text, detail)
        if block.position in keyed:
            layers.changing.add(block.name)
        if block.position == "at_depth":
            layers.depths.append((block.depth, layer))
        else:
            getattr(layers, block.position).append(layer)
    if placement.left_out and not placement.blocks:
        layers.notes.append(ContextBlock("worldbook", 0, placement.detail))  # nothing fit: say so all the same
    return layers
