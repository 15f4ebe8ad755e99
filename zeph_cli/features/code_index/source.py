"""The code index as a context source: `<repo_map>` and `<code_context>` for the running turn.

Invariant: `prepare` reads what is indexed (never waits for a build, never raises but for cancellation:
a failure leaves both blocks out and is said in `lines`); the query is the turn's message (outside a
turn, the last user message: what `zeph context` previews); chunks the conversation already shows
(`window.py`) are left out; the map is personalized to the files and identifiers of the recent
conversation and the message, rendered for the most room the block can have and cut to the room given.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

from ...context.blocks import Block, Source, TurnInput
from ...log import get_logger
from ...tokens import exact_counter
from .blocks import MAP_HEAD, REPO_MAP_SHARE, CodeEntries, code_context_block, repo_map_block

if TYPE_CHECKING:
    from ...agent.source_host import SourceHost
    from ...context.report import ContextReport
    from ...messages import Message
    from .repo_map import RepoMap
    from .search import Hit
    from .service import CodeIndex

log = get_logger(__name__)

SEARCH_K = 12  # chunks retrieved; those that fit the slot are sent
MAP_FRAME_TOKENS = 12  # the <repo_map> tags and a message's framing, beside the map's lines


class CodeIndexSource(Source):
    name = "code index"

    def __init__(self, agent: SourceHost) -> None:
        self.agent = agent
        self.hits: list[Hit] = []
        self.map: RepoMap | None = None
        self.said: list[str] = []
        self.query = ""

    @property
    def index(self) -> CodeIndex | None:
        return self.agent.extras.code_index

    async def prepare(self, turn: TurnInput) -> list[Block]:
        self.hits, self.map, self.said = [], None, []
        index = self.index
        if index is None:
            return []
        try:
            await self._gather(index, turn)
        except Exception as exc:
            log.warning("code index source failed", exc_info=True)
            self.said.append(f"the code index could not be read: {exc}")
        return self.blocks(turn)

    async def _gather(self, index: CodeIndex, turn: TurnInput) -> None:
        messages = [item.message for item in turn.history]
        self.query = turn.prompt or _last_user_text(messages)
        cap = self.agent.config.index.repo_map_tokens
        budget = min(cap, int(turn.available * REPO_MAP_SHARE)) if turn.available else cap
        count = exact_counter(turn.counter).count if turn.counter is not None else _rough_count
        room = budget - count(MAP_HEAD) - MAP_FRAME_TOKENS if cap else 0
        code = await index.for_turn(self.query, messages, self.agent.cwd, k=SEARCH_K, map_tokens=max(room, 0),
                                    count_tokens=count)
        self.hits, self.map = code.hits, code.map
        if not code.indexed:
            building = " (being built now)" if index.state.running else ""
            self.said.append(f"the code index of {index.root} is empty{building}: `zeph index` builds it")
            return
        if not self.query:
            self.said.append("code index: no message to retrieve code for yet")

    def blocks(self, turn: TurnInput) -> list[Block]:
        index = self.index
        if index is None:
            return []
        from .pack import pack

        def packed(hits: Sequence[Hit], budget: int, count: Callable[[str], int]) -> tuple[str, tuple[Hit, ...]]:
            result = pack(list(hits), budget, count)
            return result.text, tuple(result.hits)

        blocks: list[Block] = []
        if self.map is not None and self.map.text.strip():
            blocks.append(repo_map_block(self.map.text, self.agent.config.index.repo_map_tokens,
                                         f"{self.map.files} files, {self.map.definitions} definitions"))
        if self.hits:
            blocks.append(code_context_block(CodeEntries(tuple(self.hits), packed),
                                             self.agent.config.index.code_context_share,
                                             f"for {_quoted(self.query)}"))
        return blocks

    def lines(self, report: ContextReport) -> list[str]:
        index = self.index
        if index is None:
            return []
        lines = list(self.said)
        state = index.state
        if state.running:
            lines.append(f"code index: building ({state.stage} {state.done:,}/{state.total:,})")
        elif state.problem:
            lines.append(f"code index: the last build failed: {state.problem}")
        return lines


def _last_user_text(messages: Sequence[Message]) -> str:
    return next((m.content for m in reversed(messages) if m.role == "user" and m.content.strip()), "")


def _rough_count(text: str) -> int:
    return len(text) // 4 + 1


def _quoted(query: str, limit: int = 60) -> str:
    one_line = " ".join(query.split())
    return repr(one_line if len(one_line) <= limit else one_line[: limit - 1] + "…")
