"""The memory layer as the agent uses it: per-turn recall and memories, background indexing.

Invariant: a turn never waits for embedding its own or earlier messages —
new messages are embedded on a background thread with its own database
connection, after the reply; a turn waits for the embedder only when its
query names something (both recall legs run for such a query), and loading
the embedder starts at once in the background so it overlaps the rest of
start-up. A turn's searches (SQLite, the vector index, the query's embedding,
the ranking) run on the reader's thread with its own connection (`reader.py`),
never on the event loop: a turn that stops waiting for them (a source past
its deadline) goes on at once, and they end on their own. `on_demand` (one-shot `zeph ask`) loads it only for such a query
(from start-up, as the prompt is known then: `embeds_for`): a turn that did not load it
leaves its messages unembedded, and the next turn that loads it embeds the
recent ones (`CATCH_UP_MESSAGES`) with its own. Every failure of the memory
layer (an index down, an embedder failing) degrades recall and is reported
once, never raised into the turn. The process never ends while a background
thread is inside the embedder's native code: at exit, indexing is asked to
stop after its batch and both threads get `EXIT_WAIT_SECS` to end (a native
runtime such as onnxruntime aborts the whole process, "terminate called
without an active exception", when the interpreter finalizes under it); the
reader's searches, which embed the query, get the same wait.
"""

from __future__ import annotations

import asyncio
import atexit
import dataclasses
import threading
import time
import weakref
from collections.abc import Collection, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from ...context.recall_block import RecallEntry, render_entry
from .fusion import names_something
from .reader import Reader
from .recall import RECALLED_ROLES, RecallResult, dense_query, recall

if TYPE_CHECKING:
    from ...store import ConversationStore
    from ...store.sqlite import Database

    from ...config import Config
    from .embedders.base import Embedder
    from .vectors.base import VectorIndex

WARM_WAIT_SECS = 30.0  # a query waits at most this long for the embedder to load
FINISH_WAIT_SECS = 5.0  # at exit, the last turn's vectors get this long to be stored
EXIT_WAIT_SECS = 10.0  # then a load or an embedding batch still running gets this long to end
# An on-demand turn that loads the embedder also embeds what the turns before it (which did not load
# it) left unembedded, up to this many messages back; an older backlog is `zeph memory reindex`'s.
CATCH_UP_MESSAGES = 200


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


@dataclass(frozen=True)
class _QueryVectors:
    memory: object  # the query's own vector (ranks saved memories)
    recall: object  # what recall's vector leg searches with (see recall.dense_query)


@dataclass(frozen=True)
class _Found:
    """What the reader's thread found for one turn, and the notes to say, in order ("" = none)."""
    result: RecallResult | None
    memory_text: str
    memory_ids: tuple[int, ...]
    notes: tuple[str, ...]
    embedding_failed: str  # why the embedder failed this turn (it is not asked again), or ""


@dataclass
class _Loaded:
    """The embedder and vector index once loaded, or why they could not be."""
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
        self._reader = Reader(db, self.db_path)  # the turn's searches, off the event loop
        self.project_root = project_root
        self._make_embedder = make_embedder
        self._make_index = make_index
        self._loaded = _Loaded()
        self._warm: threading.Thread | None = None
        self._indexer: threading.Thread | None = None
        self._index_lock = threading.Lock()
        self._index_from: int | None = None  # the smallest message id a pending indexing pass starts at
        self._stopping = threading.Event()
        self._said: set[str] = set()
        self.last = TurnMemory()
        self.index_problem = ""
        self.on_demand = False  # load the embedder only for a query that names something (see the invariant)

    @property
    def semantic_on(self) -> bool:
        return self.config.memory.semantic.enabled

    @property
    def long_term_on(self) -> bool:
        return self.config.memory.long_term.enabled

    def embeds_for(self, query: str) -> bool:
        """Whether a turn on `query` loads the embedder: semantic recall on, and a query that names something
        in any script (both legs run for every such query; "continue" or "hello there" recalls nothing)."""
        return self.semantic_on and names_something(query)

    # ---- loading -------------------------------------------------------------

    def start_warming(self) -> None:
        """Load the embedder (numpy, the model files) and open the index on a background thread."""
        if self._warm is None and (self.semantic_on or self.long_term_on):
            _wait_for_at_exit(self)
            self._warm = threading.Thread(target=self._load, name="zeph-embedder", daemon=True)
            self._warm.start()

    def _load(self) -> None:
        from .embedders.base import EmbeddingError

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
        if wait or not self.on_demand:
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
        is awaited only for a query that names something. Never raises: a failure sends neither, with a note."""
        try:
            return await self._prepare(conversation_id, query, exclude_ids, memory_chars)
        except Exception as exc:  # noqa: BLE001 — the memory layer never breaks a turn
            notes: list[str] = []
            self._say_once(notes, f"recall and memories skipped this turn: {exc}")
            self.last = TurnMemory(query, notes=tuple(notes))
            return self.last

    async def _prepare(
        self, conversation_id: int, query: str, exclude_ids: Collection[int], memory_chars: int | None
    ) -> TurnMemory:
        notes: list[str] = []
        if self.index_problem:
            self._say_once(notes, self.index_problem)
        needs_vectors = self.embeds_for(query)
        loaded = await self._ready(wait=needs_vectors)
        self._say_once(notes, loaded.problem)
        found = await self._reader.run(
            lambda db: self._search(db, loaded, conversation_id, query, exclude_ids, memory_chars, needs_vectors)
        )
        if found.embedding_failed:  # an embedder that fails is not asked again by this process
            self._loaded.embedder, self._loaded.problem = None, found.embedding_failed
        for note in found.notes:
            self._say_once(notes, note)
        result = found.result
        entries: tuple[RecallEntry, ...] = ()
        if result is not None:
            entries = tuple(
                render_entry(h.message_id, h.role, h.created_at, h.conversation_title, h.content) for h in result.hits
            )
        self.last = TurnMemory(query, result, entries, found.memory_text, found.memory_ids, tuple(notes))
        return self.last

    def _search(
        self, db: "Database", loaded: _Loaded, conversation_id: int, query: str, exclude_ids: Collection[int],
        memory_chars: int | None, needs_vectors: bool,
    ) -> _Found:
        """Recall and memories for `query` on `db` (the reader's connection, on its thread): the SQLite
        searches, the query's embedding and the ranking, with the notes to say in order."""
        notes: list[str] = []
        failed = ""
        index = self._search_index(db, notes) if loaded.embedder is not None and self.semantic_on else None
        # One embedding of the query per turn, for recall and memory ranking alike (and shared with the
        # other rankers of the turn's prompt: text_vectors.prompt_vector).
        query_vector = None
        embedder = loaded.embedder if needs_vectors else None
        if embedder is not None:
            from .embedders.base import EmbeddingError

            try:
                query_vector = self._query_vectors(embedder, query, dense_query(db, query))
            except EmbeddingError as exc:
                failed = f"semantic recall uses keyword search only: {exc}"
                notes.append(failed)
                embedder = index = None
        result: RecallResult | None = None
        if self.semantic_on:
            result = recall(
                db,
                query,
                self.config.memory,
                conversation_id=conversation_id,
                exclude_ids=exclude_ids,
                embedder=embedder if index is not None else None,
                index=index,
                query_vector=query_vector.recall if query_vector is not None else None,
            )
            notes.append(result.note)
        memory_ids: tuple[int, ...]
        memory_text, memory_ids = "", ()
        if self.long_term_on:
            memory_text, memory_ids = self._memories(db, conversation_id, query, embedder,
                                                     query_vector.memory if query_vector is not None else None,
                                                     memory_chars, notes)
        return _Found(result, memory_text, memory_ids, tuple(notes), failed)

    @staticmethod
    def _query_vectors(embedder: "Embedder", query: str, dense: str) -> "_QueryVectors":
        """The query's vector for memories (the turn's prompt: shared, see `prompt_vector`) and, when a
        common name was left out of it (`dense`), the vector recall's vector leg searches with."""
        from .text_vectors import prompt_vector

        own = prompt_vector(embedder, query)
        return _QueryVectors(own, own if dense == query else embedder.embed([dense])[0])

    def _memories(
        self, db: "Database", conversation_id: int, query: str, embedder: "Embedder | None", query_vector,
        max_chars: int | None, notes: list[str],
    ) -> tuple[str, tuple[int, ...]]:
        """The `<memory>` block: ranked by vectors when the query was embedded, else by keywords."""
        from .long_term_store import MemoryStore
        from .long_term_access import select_for_turn

        config = self.config.memory.long_term
        if max_chars is not None and max_chars < config.max_chars:
            config = dataclasses.replace(config, max_chars=max_chars)
        selection = select_for_turn(
            MemoryStore(db), embedder, query, str(self.project_root), conversation_id, config, query_vector
        )
        notes.append(selection.warning or "")
        return selection.text, tuple(selection.ids)

    @property
    def embedder(self) -> "Embedder | None":
        """The embedder once it has loaded (None before, or when it could not load)."""
        if self._warm is not None and not self._warm.is_alive():
            return self._loaded.embedder
        return None

    def embedder_in_thread(self) -> "Embedder | None":
        """The embedder, loading it and waiting for it in the calling thread (never the event loop's); None
        when it cannot load. For the code index's threads, which share recall's model."""
        self.start_warming()
        if self._warm is not None:
            self._warm.join(WARM_WAIT_SECS)
        return self.embedder

    async def ready_embedder(self) -> "Embedder | None":
        """The embedder, waiting (off the event loop) for it to load; None when it cannot load.
        For other rankers (skills, MCP tool discovery) that share recall's model."""
        return (await self._ready(wait=True)).embedder

    def _search_index(self, db: "Database", notes: list[str]) -> "VectorIndex | None":
        """The vector index on the reader's connection `db` (on its thread), opened on first use (None
        when it cannot open)."""
        if self._loaded.index is None and not self._loaded.problem:
            from .vectors.base import VectorIndexDown

            try:
                self._loaded.index = self._make_index(db, self.db_path)
            except VectorIndexDown as exc:
                notes.append(f"semantic recall fell back to keyword search: {exc}")
            except Exception as exc:  # noqa: BLE001 — a broken index must not break a turn
                notes.append(f"semantic recall fell back to keyword search: the vector index failed ({exc})")
        return self._loaded.index

    async def backlog(self) -> int:
        """Stored messages with no vector of the embedder's model (0 when recall is off or cannot embed)."""
        loaded = await self._ready(wait=True)
        embedder = loaded.embedder
        if not self.semantic_on or embedder is None:
            return 0

        def missing(db: "Database") -> int:
            index = self._search_index(db, [])
            return index.missing_count(embedder.model, RECALLED_ROLES) if index is not None else 0

        try:
            return await self._reader.run(missing)
        except Exception:  # noqa: BLE001 — a hint only
            return 0

    # ---- background indexing -----------------------------------------------------

    def index_in_background(self, since_id: int) -> None:
        """Embed the agent-visible messages from `since_id` on (the turn's own) on a thread of its own.

        Older messages without a vector (a database from before recall) are left to `zeph memory
        reindex`, which `zeph context` suggests: a turn never pays for a backlog.
        """
        if not self.semantic_on or self.db_path is None:
            return
        if self.on_demand:
            if self._warm is None:
                return  # not loaded for this turn: a later turn that loads it catches up
            since_id = max(since_id - CATCH_UP_MESSAGES, 0)
        with self._index_lock:
            self._index_from = since_id if self._index_from is None else min(self._index_from, since_id)
            if self._indexer is not None:  # running: it takes the new request before it ends
                return
            self.start_warming()
            self._indexer = threading.Thread(target=self._index_loop, name="zeph-indexer", daemon=True)
            self._indexer.start()

    def _index_loop(self) -> None:
        while True:
            with self._index_lock:  # taken with the check in index_in_background: no request is lost
                since, self._index_from = self._index_from, None
                if since is None:
                    self._indexer = None  # under the lock: the next request starts a new thread
                    return
            try:
                self.index_pending(since_id=since, should_stop=self._stopping.is_set)
            except Exception as exc:  # noqa: BLE001 — reported with the next turn, never raised into one
                self.index_problem = f"indexing new messages for recall failed: {exc}"

    def index_pending(self, progress=None, *, since_id: int = 0, should_stop=lambda: False) -> int:
        """Embed what is not indexed yet from `since_id` on, on a connection of this thread's own; how many
        messages were embedded."""
        from ...store.database import open_database
        from .indexer import embed_pending

        if self._warm is not None:
            self._warm.join()
        embedder = self._loaded.embedder
        if embedder is None or self.db_path is None:
            return 0
        db = open_database(self.db_path)
        try:
            return embed_pending(self._make_index(db, self.db_path), embedder, progress, since_id=since_id,
                                 should_stop=should_stop)
        finally:
            db.close()

    def stop_indexing(self) -> None:
        """Indexing stops after the batch it is on."""
        self._stopping.set()

    def join_threads(self, deadline: float) -> None:
        """Wait for the loading and indexing threads and the reader's searches until `deadline`
        (`time.monotonic()`)."""
        for thread in (self._warm, self._indexer):
            if thread is not None and thread.is_alive():
                thread.join(max(deadline - time.monotonic(), 0.0))
        self._reader.close(max(deadline - time.monotonic(), 0.0))

    async def finish(self, timeout: float = FINISH_WAIT_SECS) -> None:
        """Give background indexing up to `timeout` seconds to store the last turn's vectors (for `zeph ask`,
        after the reply is shown); then ask it to stop. Polls, so an interrupt is never held up."""
        indexer = self._indexer
        waited = 0.0  # (the thread clears self._indexer when done; `indexer` keeps the one to wait for)
        while indexer is not None and indexer.is_alive() and waited < timeout:
            await asyncio.sleep(0.02)
            waited += 0.02
        self._stopping.set()


_with_threads: "weakref.WeakSet[MemoryService]" = weakref.WeakSet()
_exit_hook_lock = threading.Lock()
_exit_hook_registered = False


def _wait_for_at_exit(service: MemoryService) -> None:
    """Have `_end_background_work` run at exit for `service` (the hook is registered once per process)."""
    global _exit_hook_registered
    with _exit_hook_lock:
        if not _exit_hook_registered:
            atexit.register(_end_background_work)
            _exit_hook_registered = True
        _with_threads.add(service)


def _end_background_work(timeout: float = EXIT_WAIT_SECS) -> None:
    """At exit (before the interpreter finalizes): stop indexing after its batch, then wait for the loading
    and indexing threads, all of them within `timeout` seconds. Ctrl+C ends the wait."""
    services = list(_with_threads)
    for service in services:
        service.stop_indexing()
    deadline = time.monotonic() + timeout
    try:
        for service in services:
            service.join_threads(deadline)
    except KeyboardInterrupt:
        pass


def echoing_replies(store: "ConversationStore", conversation_id: int) -> list[tuple[int, list[str]]]:
    """The session's replies marked as repeating an injected block verbatim (id, blocks), oldest first."""
    return [(row.id, [str(b) for b in row.metadata["echo"]]) for row in store.history(conversation_id)
            if row.role == "assistant" and isinstance(row.metadata.get("echo"), list) and row.metadata["echo"]]
