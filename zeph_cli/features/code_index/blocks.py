"""The code index's two blocks: `<repo_map>` (the project's shape) and `<code_context>` (code retrieved for
the message).

Invariant: pure values. Both are per-turn (they follow the message), placed just before it so the cached
prefix and the history before them stay the same from turn to turn. `<code_context>` takes the allocation
table's `code_context` slot (its presence switches the table to the "with code index" column) and only
room nothing else uses; `<repo_map>` takes a share of the budget, at most `[index] repo_map_tokens`, and
is cut by whole files from its end. Neither is ever sent over the room it is given.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, NamedTuple

from ...context.allocation import CODE_SLOT
from ...context.blocks import TURN_ORDER, Block, Fitted, Placement, Room, Shrink
from ...tokens import MESSAGE_OVERHEAD

if TYPE_CHECKING:
    from .search import Hit

REPO_MAP = "repo map"
CODE_CONTEXT = "code context"
REPO_MAP_SHARE = 0.08  # of the available budget, at most `repo_map_tokens`: 1,024 from ~16k up
UNBUDGETED_CODE_TOKENS = 4000  # <code_context>'s cap when there is no budget to take a share of

MAP_HEAD = ("The project's main files and their definitions, most referenced and most relevant to this "
            "conversation first (signatures only; read a file for its code):")
CODE_HEAD = ("Code from this project retrieved for the message below (it may be incomplete or not what is "
             "asked about; read the file for more):")


def repo_map_text(body: str) -> str:
    return f"<repo_map>\n{MAP_HEAD}\n{body}\n</repo_map>" if body.strip() else ""


def code_context_text(body: str) -> str:
    return f"<code_context>\n{CODE_HEAD}\n{body}\n</code_context>" if body.strip() else ""


class RepoMapEntries(NamedTuple):
    """The map as rendered for the turn's largest room: fitted by dropping whole files from its end."""

    body: str  # per file: its path's line, then its definitions' lines, indented
    cap: int  # `repo_map_tokens`: the whole block's most tokens

    def __bool__(self) -> bool:
        return bool(self.body.strip())

    def fit(self, room: Room) -> Fitted:
        allowance = min(room.allowance, self.cap)
        if allowance <= MESSAGE_OVERHEAD:
            return Fitted()
        files = _files(self.body)
        while files:
            text = repo_map_text("\n".join(files))
            if room.measure(text) <= allowance:
                return Fitted(text, f"{len(files)} file{'' if len(files) == 1 else 's'}", tuple(f.split("\n", 1)[0] for f in files))
            files.pop()
        return Fitted()


def _files(body: str) -> list[str]:
    """The map's files: each a path line and the indented lines under it."""
    files: list[str] = []
    for line in body.splitlines():
        if (line and not line[0].isspace()) or not files:
            files.append(line)
        else:
            files[-1] += "\n" + line
    return [f for f in files if f.strip()]


class CodeEntries(NamedTuple):
    """Retrieved chunks, best first: packed whole within the room (`pack`)."""

    hits: tuple[Hit, ...]
    pack: Callable[[Sequence[Hit], int, Callable[[str], int]], tuple[str, tuple[Hit, ...]]]

    def __bool__(self) -> bool:
        return bool(self.hits)

    def fit(self, room: Room) -> Fitted:
        if room.allowance <= MESSAGE_OVERHEAD:
            return Fitted()
        body, kept = self.pack(self.hits, room.allowance, lambda text: room.measure(code_context_text(text)))
        if not kept:
            return Fitted()
        text = code_context_text(body)
        return Fitted(text, f"{len(kept)} of {len(self.hits)} chunks", tuple(f"{h.path}:{h.start_line}-{h.end_line}" for h in kept))


def repo_map_block(body: str, cap: int, detail: str = "") -> Block:
    return Block(REPO_MAP, RepoMapEntries(body, cap), Placement.BEFORE_TURN, TURN_ORDER[REPO_MAP], share=REPO_MAP_SHARE,
                 cap=cap, shrink=Shrink.ENTRIES, stable=False, detail=detail)


def code_context_block(entries: CodeEntries, share: float, detail: str = "") -> Block:
    return Block(CODE_CONTEXT, entries, Placement.BEFORE_TURN, TURN_ORDER[CODE_CONTEXT], slot=CODE_SLOT, slot_share=share,
                 cap=UNBUDGETED_CODE_TOKENS, shrink=Shrink.ENTRIES, stable=False, detail=detail)
