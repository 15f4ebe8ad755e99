"""Long-term memory seen from one place: what a turn injects, what tools and commands save and search.

Invariant: a place (project root, maybe a session) sees user memories, its project's
and its session's, never archived ones; vectors of different models are never
compared — a memory whose vector is missing, stale or of another model is embedded
again and stored before it is ranked, and when embedding fails the whole ranking
falls back to keyword similarity and says why in `warning`. numpy is imported only
when an embedder is used.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from ...config import LongTermConfig
from ...errors import UsageError
from .long_term_store import Memory, MemoryStore, check_scope

if TYPE_CHECKING:  # ranking and rendering load when there are memories to rank
    import numpy as np

    from .embedders.base import Embedder
    from .long_term import RankedMemory

Method = Literal["vector", "keyword", "none"]


@dataclass(frozen=True)
class MemorySelection:
    """What one turn injects: the `<memory>` block ("" = none) and the memories in it."""

    text: str
    ids: tuple[int, ...]
    ranked: tuple[RankedMemory, ...] = ()  # the top-k candidates, best first (the block may hold fewer)
    method: Method = "none"  # how similarity was measured
    warning: str | None = None  # why vectors were not used, when an embedder failed


def _vector_bytes(row: Any) -> bytes:
    import numpy as np

    return np.asarray(row, dtype=np.float32).tobytes()


def _usable(memory: Memory, model: str, dim: int) -> bool:
    return memory.embedding_model == model and memory.vector is not None and len(memory.vector) == 4 * dim


def vector_similarities(
    store: MemoryStore, embedder: "Embedder", query: str, memories: Sequence[Memory], query_vector: "np.ndarray | None"
) -> list[float]:
    """Cosine similarity of each memory to the query, embedding (and storing) the memories that need it.
    Raises `EmbeddingError` when the embedder fails."""
    import numpy as np

    if query_vector is None:
        query_vector = embedder.embed([query])[0]
    query_vector = np.asarray(query_vector, dtype=np.float32).reshape(-1)
    dim = query_vector.shape[0]
    missing = [m for m in memories if not _usable(m, embedder.model, dim)]
    fresh: dict[int, bytes] = {}
    if missing:
        rows = embedder.embed([m.content for m in missing])
        fresh = {m.id: _vector_bytes(row) for m, row in zip(missing, rows)}
        store.set_vectors(embedder.model, [(m, fresh[m.id]) for m in missing])
    matrix = np.stack([np.frombuffer(fresh.get(m.id) or m.vector or b"", dtype=np.float32) for m in memories])
    return [float(s) for s in matrix @ query_vector]


def rank_for_query(
    store: MemoryStore,
    embedder: "Embedder | None",
    query: str,
    memories: Sequence[Memory],
    top_k: int,
    query_vector: "np.ndarray | None" = None,
) -> tuple[list[RankedMemory], Method, str | None]:
    """The memories ranked for `query` (top_k, 0 = all), how similarity was measured, and a warning."""
    if not memories:
        return [], "none", None
    from .embedders.base import EmbeddingError
    from .long_term import keyword_similarity, keyword_terms, rank_memories

    warning = None
    if embedder is not None and query.strip():
        try:
            similarities = vector_similarities(store, embedder, query, memories, query_vector)
            return rank_memories(memories, similarities, top_k), "vector", None
        except EmbeddingError as exc:
            warning = f"long-term memory ranked by keywords: {exc}"
    terms = keyword_terms(query)
    similarities = [keyword_similarity(terms, m.content) for m in memories]
    return rank_memories(memories, similarities, top_k), "keyword", warning


def select_for_turn(
    store: MemoryStore,
    embedder: "Embedder | None",
    query: str,
    project_root: str | None,
    conversation_id: int | None,
    config: LongTermConfig,
    query_vector: "np.ndarray | None" = None,
) -> MemorySelection:
    """The `<memory>` block for a turn whose user message is `query`: the top_k memories visible here
    (0 = all) by similarity × 0.5 + confidence × 0.3 + scope priority × 0.2, within `max_chars`."""
    if not config.enabled:
        return MemorySelection("", ())
    memories = store.visible_for(project_root, conversation_id)
    if not memories:
        return MemorySelection("", ())
    from ...context.memory_block import render_memory_block

    ranked, method, warning = rank_for_query(store, embedder, query, memories, config.top_k, query_vector)
    block = render_memory_block(ranked, config.max_chars)
    return MemorySelection(block.text, block.ids, tuple(ranked), method, warning)


def project_root_of(cwd: Path) -> tuple[str, bool]:
    """The project root memories of `cwd` belong to (its git work tree, else `cwd`), and whether it is
    a real project (a git work tree)."""
    from ...tools.confinement import workspace_root

    root = workspace_root(cwd)
    return str(root), (root / ".git").exists()


@dataclass
class LongTermMemory:
    """Long-term memory bound to one place: the memory tools, `zeph memory` and `/memory` use it."""

    store: MemoryStore
    project_root: str
    in_project: bool
    conversation_id: int | None = None
    embedder: "Embedder | None" = None
    config: LongTermConfig = field(default_factory=LongTermConfig)

    @classmethod
    def here(cls, store: MemoryStore, cwd: Path, **kwargs: Any) -> "LongTermMemory":
        root, in_project = project_root_of(cwd)
        return cls(store, root, in_project, **kwargs)

    def default_scope(self) -> str:
        """`project` inside a project (a git work tree), else `user`."""
        return "project" if self.in_project else "user"

    def visible(self) -> list[Memory]:
        return self.store.visible_for(self.project_root, self.conversation_id)

    def save(
        self, content: str, scope: str | None = None, confidence: float = 1.0, source: str = "tool"
    ) -> tuple[Memory, bool]:
        """Save a memory here; the memory and whether it is new (the same text in the same scope is kept once)."""
        scope = check_scope(scope or self.default_scope())
        if scope == "session" and self.conversation_id is None:
            raise UsageError("a session memory needs a session: there is none here yet")
        text = content.strip()
        for memory in self.visible():
            if memory.scope == scope and memory.content == text:
                return memory, False
        memory = self.store.add(
            text, scope=scope, source=source, confidence=confidence,
            project_root=self.project_root, conversation_id=self.conversation_id,
        )
        return memory, True

    def search(self, query: str, limit: int) -> tuple[list[RankedMemory], str | None]:
        """The memories visible here that share something with `query`, best first (at most `limit`),
        and a warning if any."""
        ranked, _, warning = rank_for_query(self.store, self.embedder, query, self.visible(), 0)
        return [r for r in ranked if r.similarity > 0][: max(limit, 1)], warning

    def select_for_turn(self, query: str, query_vector: "np.ndarray | None" = None) -> MemorySelection:
        return select_for_turn(
            self.store, self.embedder, query, self.project_root, self.conversation_id, self.config, query_vector
        )
