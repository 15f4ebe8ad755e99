"""Which MCP tools a turn is offered when there are many (`[mcp.tool_discovery]`).

Invariant: with strategy "embedding", more than `min_tools_to_filter` tools and
an embedder, a turn gets the `top_k` tools most similar to the message (cosine
of the message and "name: description") that reach `min_similarity`, plus every
`always_include` tool; otherwise every tool. Tool vectors are embedded once per
text, and kept across processes when given a `ToolVectors` (cache.py). A missing or failing embedder is said once and then every tool is offered. A message that names
nothing (recall's `names_something`: "hello there", "continue") has nothing to rank by and loads no
embedder: it is offered the tools picked for the last message that named something, or every tool.
`rank` orders tools for a budget that fits only some; offered tools keep their
servers' order either way, so the tool list stays a stable prompt prefix.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Sequence
from typing import TYPE_CHECKING, Protocol, TypeVar, Union

from ..memory.fusion import names_something
from ..memory.text_vectors import TextVectors

if TYPE_CHECKING:
    from ...config.mcp import ToolDiscoveryConfig
    from ..memory.embedders.base import Embedder
    from .cache import ToolVectors


class DiscoverableTool(Protocol):
    name: str
    description: str


def tool_text(tool: DiscoverableTool) -> str:
    return f"{tool.name}: {tool.description}"


T = TypeVar("T", bound=DiscoverableTool)
# The embedder itself, or an async getter that loads it (memory's `ready_embedder`) when first needed.
EmbedderSource = Union["Embedder", Callable[[], Awaitable["Embedder | None"]], None]


class ToolDiscovery:
    def __init__(self, config: ToolDiscoveryConfig, embedder: EmbedderSource, kept: ToolVectors | None = None) -> None:
        self.config = config
        self._source = embedder
        self.embedder: Embedder | None = None
        self._vectors = TextVectors()
        self._warnings: list[str] = []
        self._warned = False
        self._kept = kept
        self._seeded = False  # the kept vectors were read
        self._picked: set[str] | None = None  # the names picked for the last message that named something

    def take_warnings(self) -> list[str]:
        out, self._warnings = self._warnings, []
        return out

    def filters(self, count: int) -> bool:
        return self.config.strategy == "embedding" and count > self.config.min_tools_to_filter

    async def select(self, message: str, tools: Sequence[T]) -> list[T]:
        """The tools to offer for `message`, in their original order (a stable prefix for prompt caches)."""
        if not self.filters(len(tools)):
            return list(tools)
        if not names_something(message):
            kept = [tool for tool in tools if self._picked is not None and tool.name in self._picked]
            return kept or list(tools)
        scores = await self._scored(message, tools, f"{len(tools)} MCP tools are all offered")
        if scores is None:
            return list(tools)
        ranked = sorted(range(len(tools)), key=lambda i: scores[i], reverse=True)
        chosen = {i for i in ranked[: self.config.top_k] if scores[i] >= self.config.min_similarity}
        always = set(self.config.always_include)
        chosen |= {i for i, tool in enumerate(tools) if tool.name in always}
        self._picked = {tool.name for i, tool in enumerate(tools) if i in chosen}
        return [tool for i, tool in enumerate(tools) if i in chosen]

    async def rank(self, message: str, tools: Sequence[T]) -> list[T]:
        """All of `tools`, the ones to keep first when the budget has room for only some: `always_include`
        tools, then by similarity to `message` (without an embedder, the original order)."""
        scores = None
        wanted = len(tools) > 1 and names_something(message)  # a message naming nothing: listed order
        if wanted and (self.embedder is not None or self._source is not None):  # memory off: listed order
            scores = await self._scored(message, tools, "MCP tools that do not fit the budget are left out in listed order")
        always = set(self.config.always_include)
        order = sorted(range(len(tools)), key=lambda i: (tools[i].name not in always, -(scores[i] if scores else 0.0), i))
        return [tools[i] for i in order]

    async def _scored(self, message: str, tools: Sequence[T], fallback: str) -> list[float] | None:
        """Similarity of each tool to `message`; None (said once, with `fallback`) without a working embedder."""
        if self.embedder is None and self._source is not None:
            source, self._source = self._source, None
            self.embedder = await source() if callable(source) else source  # a getter, or the embedder itself
        if self.embedder is None:
            self._warn_once(f"{fallback}: tool discovery needs an embedder (memory is off)")
            return None
        try:
            return await asyncio.to_thread(self._scores, message, tools)
        except Exception as exc:  # noqa: BLE001 — an embedder failure must not stop the turn
            self._warn_once(f"{fallback}: tool discovery failed: {exc}")
            return None

    def _scores(self, message: str, tools: Sequence[DiscoverableTool]) -> list[float]:
        assert self.embedder is not None
        model = self.embedder.model
        if self._kept is not None and not self._seeded:
            self._seeded = True
            self._vectors.add(model, self._kept.load(model))
        before = self._vectors.embedded
        scores = self._vectors.similarities(self.embedder, [tool_text(t) for t in tools], message)
        if self._kept is not None and self._vectors.embedded > before:
            self._kept.save(model, self._vectors.known(model))
        return scores

    def _warn_once(self, text: str) -> None:
        if not self._warned:
            self._warned = True
            self._warnings.append(text)
