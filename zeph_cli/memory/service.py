"""The memory layer as the agent uses it: per-turn recall and memories, background indexing.

Invariant: a turn never waits for embedding its own or earlier messages —
new messages are embedded on a background thread with its own database
connection, after the reply; a turn waits for the embedder only when its
query is routed to vectors, and loading the embedder starts at once in the
background so it overlaps the rest of start-up. Every failure of the memory
layer (an index down, an embedder failing) degrades recall and is reported
once, never raised into the turn.
"""

from __future__ import annotations

import asyncio
import dataclasses
import threading
from collections.abc import Collection, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..context.recall_block import RecallEntry, render_entry
from .recall import RECALLED_ROLES, RecallResult, recall
from .routing import Route, route as route_of

if TYPE_CHECKING:
    from sqlite_utils import Database

    from ..config import Config
    from .embedders.base import Embedder
    from .vectors.base import VectorIndex

INDEX_BATCH = 256
# Pending messages read per scan. Finding them walks every stored message (~0.2 s at 100k), so
# a scan reads many at once, and a page that comes back short ends the pass without another.
PENDING_PAGE = 2048
WARM_WAIT_SECS = 30.0  # a vector-routed query waits at most this long for the embedder to load


@dataclass(frozen=True)
class TurnMemory:
    """What the memory layer adds to one turn's requests."""

    query: str = ""
    recall: RecallResult | None = None
    entries: tuple[RecallEntry, ...] = ()
    memory_text: str = ""
    memory_ids: tuple[int, ...] = ()
    notes: tuple[str, ...] = ()


def database_path(db: "Database") -> Path | None:
    row = next((r for r in db.execute("pragma database_list").fetchall() if r[1] == "main"), None)
    return Path(row[2]) if row and row[2] else None


@dataclass
class _Loaded:
    embedder: "Embedder | None" = None
    index: "VectorIndex | None" = None
    problem: str = ""


class MemoryService:
    def __init__(
        self,
        config: "Config",
        db: "Database",
        *,
        project_root: Path,
        make_embedder: Callable[[], "Embedder"],
        make_index: Callable[["Database", Path | None], "VectorIndex"],
    ) -> None:
        self.config = config
        self.db = db
        self.db_path = database_path(db)
        self.project_root = project_root
        self._make_embedder = make_embedder
        self._make_index = make_index
        self._loaded = _Loaded()
        self._warm: threading.Thread | None = None
        self._indexer: threading.Thread | None = None
        self._index_again = threading.Event()
        self._said: set[str] = set()
        self.last = TurnMemory()
        self.indexed = 0  # messages embedded by this process's background indexing
        self.index_problem = ""

    @property
    def semantic_on(self) -> bool:
        return self.config.memory.semantic.enabled

    @property
    def long_term_on(self) -> bool:
        return self.config.memory.long_term.enabled

    # ---- loading -------------------------------------------------------------

    def start_warming(self) -> None:
        """Load the embedder (numpy, the model files) and open the index on a background thread."""
        if self._warm is None and (self.semantic_on or self.long_term_on):
            self._warm = threading.Thread(target=self._load, name="zeph-embedder", daemon=True)
            self._warm.start()

    def _load(self) -> None:
        from .embedders.base import EmbeddingError
        from .vectors.base import VectorIndexDown

        try:
            embedder = self._make_embedder()
            load = getattr(embedder, "load", None)
            if load is not None:
                load()
            self._loaded.embedder = embedder
        except EmbeddingError as exc:
            self._loaded.problem = f"semantic recall uses keyword search only: {exc}"
            return
        except Exception as exc:  # noqa: BLE001 — a broken embedder must not break a turn
            self._loaded.problem = f"semantic recall uses keyword search only: the embedder failed to load ({exc})"
            return

    async def _ready(self, wait: bool) -> _Loaded:
        self.start_warming()
        if wait and self._warm is not None and self._warm.is_alive():
            await asyncio.to_thread(self._warm.join, WARM_WAIT_SECS)
        return self._loaded if self._warm is not None and not self._warm.is_alive() else _Loaded()

    def _say_once(self, notes: list[str], text: str) -> None:
        if text and text not in self._said:
            self._said.add(text)
            notes.append(text)

    def embedder_label(self) -> str:
        """The embedding model in use ("" before it loaded or when none could load)."""
        embedder = self._loaded.embedder
        return embedder.model if embedder is not None else ""

    # ---- one turn --------------------------------------------------------------

    async def prepare(
        self, conversation_id: int, query: str, exclude_ids: Collection[int], memory_chars: int | None = None
    ) -> TurnMemory:
        """Recall and memories for `query` (the `<memory>` block within `memory_chars` too); the embedder
        is awaited only for a vector-routed query."""
        notes: list[str] = []
        needs_vectors = self.semantic_on and route_of(query) is not Route.KEYWORD
        loaded = await self._ready(wait=needs_vectors)
        self._say_once(notes, loaded.problem)
        index = self._search_index(notes) if loaded.embedder is not None and self.semantic_on else None
        result: RecallResult | None = None
        entries: tuple[RecallEntry, ...] = ()
        if self.semantic_on:
            result = recall(
                self.db,
                query,
                self.config.memory,
                conversation_id=conversation_id,
                exclude_ids=exclude_ids,
                embedder=loaded.embedder if index is not None else None,
                index=index,
            )
            self._say_once(notes, result.note)
            entries = tuple(
                render_entry(h.message_id, h.role, h.created_at, h.conversation_title, h.content) for h in result.hits
            )
        memory_text, memory_ids = "", ()
        if self.long_term_on:
            memory_text, memory_ids = self._memories(conversation_id, query, loaded.embedder, memory_chars, notes)
        self.last = TurnMemory(query, result, entries, memory_text, memory_ids, tuple(notes))
        return self.last

    def _memories(
        self, conversation_id: int, query: str, embedder: "Embedder | None", max_chars: int | None, notes: list[str]
    ) -> tuple[str, tuple[int, ...]]:
        from ..store.memories import MemoryStore
        from .long_term_access import select_for_turn

        config = self.config.memory.long_term
        if max_chars is not None and max_chars < config.max_chars:
            config = dataclasses.replace(config, max_chars=max_chars)
        selection = select_for_turn(
            MemoryStore(self.db), embedder, query, str(self.project_root), conversation_id, config
        )
        self._say_once(notes, selection.warning or "")
        return selection.text, tuple(selection.ids)

    @property
    def embedder(self) -> "Embedder | None":
        """The embedder once it has loaded (None before, or when it could not load)."""
        if self._warm is not None and not self._warm.is_alive():
            return self._loaded.embedder
        return None

    def _search_index(self, notes: list[str]) -> "VectorIndex | None":
        """The vector index on this thread's connection, opened on first use (None when it cannot open)."""
        if self._loaded.index is None and not self._loaded.problem:
            from .vectors.base import VectorIndexDown

            try:
                self._loaded.index = self._make_index(self.db, self.db_path)
            except VectorIndexDown as exc:
                self._say_once(notes, f"semantic recall fell back to keyword search: {exc}")
            except Exception as exc:  # noqa: BLE001 — a broken index must not break a turn
                self._say_once(notes, f"semantic recall fell back to keyword search: the vector index failed ({exc})")
        return self._loaded.index

    # ---- background indexing -----------------------------------------------------

    def index_in_background(self) -> None:
        """Embed agent-visible messages that have no vector yet, on a thread of its own."""
        if not self.semantic_on or self.db_path is None:
            return
        self._index_again.set()
        if self._indexer is not None and self._indexer.is_alive():
            return
        self.start_warming()
        self._indexer = threading.Thread(target=self._index_loop, name="zeph-indexer", daemon=True)
        self._indexer.start()

    def _index_loop(self) -> None:
        while self._index_again.is_set():
            self._index_again.clear()
            try:
                self.indexed += index_pending(self, progress=None)
            except Exception as exc:  # noqa: BLE001 — reported, never raised into a turn
                self.index_problem = f"indexing messages for recall failed: {exc}"
                return

    async def finish(self, timeout: float = 30.0) -> None:
        """Wait for background indexing (for `zeph ask`, after the reply is shown)."""
        if self._indexer is not None:
            await asyncio.to_thread(self._indexer.join, timeout)


def index_pending(
    service: MemoryService, progress: Callable[[int, int], Any] | None = None, *, db: "Database | None" = None
) -> int:
    """Embed every agent-visible message without a vector of the embedder's model; return how many.

    Runs on its own connection (a thread of its own, or `zeph memory reindex`). A message stored
    after the last scan began waits for the next pass (the agent asks for one after every turn).
    """
    from ..store.database import open_database
    from .vectors.base import VectorRow

    if service._warm is not None:
        service._warm.join()
    loaded = service._loaded
    if loaded.embedder is None:
        return 0
    own = db is None
    db = db or open_database(service.db_path)  # type: ignore[arg-type]
    try:
        index = service._make_index(db, service.db_path)
        model = loaded.embedder.model
        total = index.missing_count(model, RECALLED_ROLES) if progress is not None else 0
        done = 0
        while True:
            page = index.missing(model, PENDING_PAGE, RECALLED_ROLES)
            for start in range(0, len(page), INDEX_BATCH):
                batch = page[start : start + INDEX_BATCH]
                vectors = loaded.embedder.embed([pending.content for pending in batch])
                index.add(model, [VectorRow(p.message_id, p.conversation_id, vectors[n]) for n, p in enumerate(batch)])
                done += len(batch)
                if progress is not None:
                    progress(done, total)
            if len(page) < PENDING_PAGE:
                return done
    finally:
        if own:
            db.close()
