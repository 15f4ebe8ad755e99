"""Worldbook entries: which trigger, which fit, and where each lands in the request (ETOS block 7).

Invariant: pure (no I/O). An entry with no keywords is constant (always triggered); a
keyword entry triggers when any keyword matches the text of the last `scan_depth` user and
assistant messages (never tool output). A keyword that is not a valid regex never raises:
the entry is skipped with one warning. Within each position the entries are ordered by
`order`, then id; when they do not all fit their allowance, the lowest-priority ones
(highest `order`, then newest) are left out first. An `at_depth` block is never put
between a tool call and its result.

Where each position lands:
- `before`: a system layer before the base prompt (`<worldbook_before>`);
- `after`: a system layer after the topic prompt, before the skills layer (`<worldbook_after>`);
- `an_top`: the first per-turn context message, before `<time>` (`<worldbook_an_top>`);
- `outlet`: a per-turn context message after `<memory>`, before semantic recall (`<worldbook_outlet>`);
- `an_bottom`: the last per-turn context message, right before summaries and history (`<worldbook_an_bottom>`);
- `at_depth` N: a context message N messages from the end of the history (0 = after the last one,
  before the closing enhancement prompt), moved to the nearest group boundary (`<worldbook_at_depth>`).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from ..messages import Message
from .history_shaping import depth_index, insert_at_depth  # noqa: F401 (at-depth blocks are placed by the assembler)

POSITIONS = ("before", "after", "an_top", "outlet", "an_bottom", "at_depth")
LAYER_POSITIONS = ("before", "after", "an_top", "outlet", "an_bottom")  # one block each
DEFAULT_POSITION = "an_top"
DEFAULT_ORDER = 100
SCANNED_ROLES = ("user", "assistant")


def block_name(position: str, depth: int = 0) -> str:
    """The block's name in the context report: "worldbook before", "worldbook at depth 2"."""
    if position == "at_depth":
        return f"worldbook at depth {depth}"
    return "worldbook " + position.replace("_", " ")


def tag(position: str) -> str:
    return f"worldbook_{position}"


@dataclass(frozen=True)
class WorldbookEntry:
    """A worldbook entry as the context sees it: its text, keywords and where it goes."""
    id: int
    content: str
    keywords: tuple[str, ...] = ()
    regex: bool = False
    case_sensitive: bool = False
    position: str = DEFAULT_POSITION
    depth: int = 0
    order: int = DEFAULT_ORDER

    @property
    def constant(self) -> bool:
        """No keywords: always on."""
        return not self.keywords


def pattern_problem(keyword: str, regex: bool) -> str | None:
    """Why `keyword` cannot be used as a trigger (None when it can)."""
    if not keyword.strip():
        return "a keyword is empty"
    if regex:
        try:
            re.compile(keyword)
        except re.error as exc:
            return f"keyword {keyword!r} is not a valid regex: {exc}"
    return None


def _matches(entry: WorldbookEntry, text: str) -> bool:
    flags = 0 if entry.case_sensitive else re.IGNORECASE
    for keyword in entry.keywords:
        pattern = keyword if entry.regex else re.escape(keyword)
        if re.search(pattern, text, flags):
            return True
    return False


def scan_text(messages: Sequence[Message], scan_depth: int) -> str:
    """The text triggers are matched against: the last `scan_depth` user and assistant messages."""
    said = [m for m in messages if m.role in SCANNED_ROLES]
    recent = said[-scan_depth:] if scan_depth > 0 else []
    return "\n".join(m.content for m in recent)


def triggered(entries: Sequence[WorldbookEntry], text: str) -> tuple[list[WorldbookEntry], list[str]]:
    """The entries that apply to `text` (constant ones always), and a warning per unusable entry."""
    on: list[WorldbookEntry] = []
    warnings: list[str] = []
    for entry in entries:
        if entry.constant:
            on.append(entry)
            continue
        problems = [p for p in (pattern_problem(k, entry.regex) for k in entry.keywords) if p]
        if problems:
            warnings.append(f"worldbook entry #{entry.id} skipped: {problems[0]}")
            continue
        if _matches(entry, text):
            on.append(entry)
    return on, warnings


def priority(entry: WorldbookEntry) -> tuple[int, int]:
    """Sort key, most important first: lowest `order`, then oldest."""
    return (entry.order, entry.id)


def render(position: str, entries: Sequence[WorldbookEntry]) -> str:
    """One position's block: its entries' contents in order, inside its tag ("" when there are none)."""
    if not entries:
        return ""
    body = "\n\n".join(e.content.strip() for e in sorted(entries, key=priority))
    return f"<{tag(position)}>\n{body}\n</{tag(position)}>"


@dataclass(frozen=True)
class WorldbookBlock:
    """Worldbook entries rendered for one position of the context."""
    name: str  # the report's block name
    text: str
    position: str
    depth: int = 0
    ids: tuple[int, ...] = ()  # the entries in it

    @property
    def detail(self) -> str:
        return ("entry " if len(self.ids) == 1 else "entries ") + ", ".join(f"#{i}" for i in self.ids)


@dataclass(frozen=True)
class WorldbookPlacement:
    """The triggered entries that fit, as blocks; what was left out."""

    blocks: tuple[WorldbookBlock, ...] = ()
    left_out: tuple[int, ...] = ()  # entry ids, in the order they were given up
    detail: str = ""  # what was left out, said beside the first worldbook block in the report

    def at(self, position: str) -> list[WorldbookBlock]:
        return [b for b in self.blocks if b.position == position]


def blocks_for(entries: Sequence[WorldbookEntry]) -> list[WorldbookBlock]:
    """Every position's block (at_depth: one per depth, deepest first)."""
    out: list[WorldbookBlock] = []
    for position in LAYER_POSITIONS:
        here = [e for e in entries if e.position == position]
        text = render(position, here)
        if text:
            out.append(WorldbookBlock(block_name(position), text, position, ids=_ids(here)))
    depths = sorted({e.depth for e in entries if e.position == "at_depth"}, reverse=True)
    for depth in depths:
        here = [e for e in entries if e.position == "at_depth" and e.depth == depth]
        out.append(WorldbookBlock(block_name("at_depth", depth), render("at_depth", here), "at_depth", depth, _ids(here)))
    return out


def _ids(entries: Sequence[WorldbookEntry]) -> tuple[int, ...]:
    return tuple(e.id for e in sorted(entries, key=lambda e: (e.order, e.id)))


def place(
    entries: Sequence[WorldbookEntry], allowance: int | None, measure: Callable[[str], int]
) -> WorldbookPlacement:
    """The blocks of `entries` within `allowance` tokens in all (`measure` counts one block as sent;
    None = no cap). Entries are taken most important first; one that does not fit what is left is
    left out, and less important but smaller ones may still fit."""
    chosen: list[WorldbookEntry] = []
    left_out: list[int] = []
    sizes: dict[str, int] = {}
    for entry in sorted(entries, key=priority):
        if allowance is None:
            chosen.append(entry)
            continue
        trial = blocks_for([*chosen, entry])
        cost = sum(sizes.get(b.text) or sizes.setdefault(b.text, measure(b.text)) for b in trial)
        if cost <= allowance:
            chosen.append(entry)
        else:
            left_out.append(entry.id)
    detail = ""
    if left_out:
        ids = ", ".join(f"#{i}" for i in left_out)
        detail = f"{len(left_out)} left out over the worldbook share ({allowance:,} tokens): {ids}"
    return WorldbookPlacement(tuple(blocks_for(chosen)), tuple(left_out), detail)
