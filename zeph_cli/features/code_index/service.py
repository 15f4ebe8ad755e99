"""One project's code index as a session uses it: searches and repo maps off the event loop, builds in the
background.

Invariant: what it gives out is redacted (secrets in code and in the map's lines become [REDACTED], as tool
output does), whoever reads it: a turn's blocks, search_code, `zeph index` and /index. Every read runs on the index's reader thread (its own connection to the zeph database, WAL),
so a turn never waits on a build's writes and the event loop never on SQLite; a build runs on its own
thread with its own connection, one at a time per process (a second request while one runs waits for
its end and then runs once more, so a change made meanwhile is picked up). A turn uses what is indexed
and never waits for a build. The repo map's graph is built once per version of the index and kept. The
embedder is asked for only when the project has vectors to compare with (or a build embeds), so a
project indexed without vectors costs no model load. The graph is also cached on disk (the cache dir, by
database, project and version), so a new process (`zeph ask`) reads it back instead of building it.
"""

from __future__ import annotations

import asyncio
import dataclasses
import hashlib
import os
import threading
from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ...log import get_logger
from ..memory.reader import Reader

if TYPE_CHECKING:
    from ...config import Config, IndexConfig
    from ...messages import Message
    from ...store.sqlite import Database
    from ..memory.embedders.base import Embedder
    from .build import BuildReport
    from .scan import IndexSettings
    from .repo_map import RepoGraph, RepoMap
    from .search import CodeSearch, Hit
    from .store import CodeStore, IndexStatus, Project

log = get_logger(__name__)

Progress = Callable[[str, int, int], None]
MAP_FROM_HITS = 3  # the files of the best retrieved chunks personalize the map too
RECENT_MESSAGES = 12  # the recent messages whose files and identifiers personalize the map


@dataclass
class TurnCode:
    """The code a turn gets: retrieved chunks, the map, and what the map was personalized to."""

    hits: list[Hit]
    map: RepoMap | None
    files: list[str]
    identifiers: set[str]
    indexed: bool = True  # the index has files (False: nothing to retrieve from, the turn gets nothing)


def settings_of(config: IndexConfig) -> IndexSettings:
    from .scan import IndexSettings

    return IndexSettings(max_file_bytes=config.max_file_bytes, exclude=tuple(config.exclude),
                         languages=tuple(config.languages))


def project_root_for(config: Config, cwd: Path, sources: dict[str, str] | None = None) -> Path | None:
    """The project the index covers from `cwd`, or None when it is off here: the git work tree's top; with
    `[index] enabled` set to true explicitly (not left at its default), the working directory elsewhere."""
    if not config.index.enabled:
        return None
    from .scan import project_root

    root = project_root(cwd)
    if root is None:
        explicit = (sources or {}).get("index.enabled", "default") != "default"
        root = cwd.resolve() if explicit else None
    return None if root is None or refused_root(root) else root


def refused_root(root: Path) -> str | None:
    """Why `root` is never indexed (the home folder, which a dotfiles repository makes a work tree, or the
    file system's root: every credential store under them would be read), or None."""
    if root == Path.home().resolve() or root.parent == root:
        return f"{root} is {'your home folder' if root.parent != root else 'the root folder'}: the index reads " \
               "a project's folder, never a whole home or disk"
    return None


@dataclass
class BuildState:
    """What the background build is doing, for /index and the status line."""

    running: bool = False
    stage: str = ""
    done: int = 0
    total: int = 0
    report: BuildReport | None = None
    embedded: int = 0
    problem: str = ""


class CodeIndex:
    """The code index of the project at `root`, over the zeph database `db` (at `db_path`)."""

    def __init__(self, config: Config, db: Database, db_path: Path | None, root: Path, *,
                 make_embedder: Callable[[], Embedder | None] | None = None) -> None:
        self.config = config
        self.settings = settings_of(config.index)
        self.root = root
        self.db_path = db_path
        self._reader = Reader(db, db_path)
        self._make_embedder = make_embedder
        self._embedder: Embedder | None = None
        self._embedder_tried = False
        self._graph: tuple[int, RepoGraph] | None = None
        self._graph_lock = threading.Lock()
        self._embedded: tuple[tuple[int, int], dict[str, int]] | None = None  # (versions, vectors per model)
        self._searcher: tuple[tuple[int, str | None], CodeSearch] | None = None  # per reader connection and model
        self._embedder_lock = threading.Lock()
        self._vectors: Any = None
        self._build_lock = threading.Lock()
        self._again = threading.Event()
        self._cancel = threading.Event()
        self._thread: threading.Thread | None = None  # the build thread while it runs (set and cleared under the lock)
        self._last_thread: threading.Thread | None = None  # the latest build thread, to wait for
        self._watcher: threading.Thread | None = None
        self._closing = threading.Event()  # set once by close(): no build starts after it, the watcher ends
        self.state = BuildState()
        self.holds_code = False  # the index had chunks when last looked at (a status read, a build)
        self.dense_failure = ""  # why the last search went without vectors ("" = it did not, or had none)

    # ---- reading (the reader thread) ------------------------------------------------

    def embedder(self) -> Embedder | None:
        """The embedder, made and loaded on first use (once, whichever thread asks first; the others wait)."""
        with self._embedder_lock:
            if not self._embedder_tried and self._make_embedder is not None:
                self._embedder_tried = True
                try:
                    embedder = self._make_embedder()
                    load = getattr(embedder, "load", None)
                    if embedder is not None and load is not None:
                        load()
                    self._embedder = embedder
                except Exception as exc:  # noqa: BLE001 - no embedder: lexical search still works
                    log.warning("code index: no embedder (%s); searching by words only", exc)
            return self._embedder

    @property
    def embedding_model(self) -> str:
        """The model of the embedder in use ("" before one loaded, or when none could)."""
        return self._embedder.model if self._embedder is not None else ""

    def warm(self) -> None:
        """Get what a turn will read ready now, each on a thread of its own with its own connection: the
        map's graph, and the embedder when the project has vectors of it (as the provider starts)."""
        if self.db_path is None or self._closing.is_set():
            return
        threading.Thread(target=self._warm, name="zeph-code-warm", daemon=True).start()

    def _warm(self) -> None:
        from ...store import open_database

        try:
            db = open_database(self.db_path)
        except Exception:  # noqa: BLE001 - the turn reads the index itself, and says what fails
            return
        try:
            store = self._store(db)
            project = store.project(self.root, create=False)
            if project is None:
                return
            status = store.status(project)
            self.holds_code = status.chunks > 0
            if any(status.embedded.values()):
                threading.Thread(target=self.embedder, name="zeph-code-embedder", daemon=True).start()
            if status.chunks:
                self._graph_for(db)
        except Exception:
            log.debug("code index warm-up failed", exc_info=True)
        finally:
            db.close()

    def _store(self, db: Database) -> CodeStore:
        from .store import CodeStore

        return CodeStore(db)

    def _vectors_for(self, db: Database) -> Any:
        from .vectors import open_code_vectors

        if self._vectors is None or getattr(self._vectors, "db", db) is not db:
            self._vectors = open_code_vectors(self.config, db)
        return self._vectors

    def _project(self, db: Database) -> Project | None:
        return self._store(db).project(self.root, create=False)

    async def status(self) -> IndexStatus | None:
        """The index's counts, or None when this project was never indexed."""

        def read(db: Database) -> IndexStatus | None:
            project = self._project(db)
            status = self._store(db).status(project) if project is not None else None
            return None if status is None or (not status.files and status.indexed_at is None) else status

        status = await self._reader.run(read)
        self.holds_code = status is not None and status.chunks > 0
        return status

    def _embedded_model(self, store: CodeStore, project: Project) -> str | None:
        """The embedder's model when the project has vectors of it (what is embedded is read again only
        when the index's chunks or vectors changed)."""
        key = (store.version(project), store.vectors_version(project))
        if self._embedded is None or self._embedded[0] != key:
            self._embedded = (key, store.status(project).embedded)
        embedded = self._embedded[1]
        embedder = self.embedder() if any(embedded.values()) else None
        return embedder.model if embedder is not None and embedded.get(embedder.model) else None

    async def search(self, query: str, k: int = 8, *,
                     exclude: Callable[[str, int, int], bool] | None = None) -> list[Hit]:
        """The `k` chunks that best answer `query` (hybrid when the project has vectors of the embedder)."""

        def run(db: Database) -> list[Hit]:
            from .search import CodeSearch

            store = self._store(db)
            project = store.project(self.root, create=False)
            if project is None:
                return []
            model = self._embedded_model(store, project)
            embedder = self._embedder if model else None
            vectors = self._vectors_for(db) if model else None
            vector = None
            if embedder is not None:
                from ..memory.text_vectors import prompt_vector

                try:  # the turn's message: embedded once for recall, memories, skills and code
                    vector = prompt_vector(embedder, query)
                except Exception:  # noqa: BLE001 - the search says why it went without vectors
                    vector = None
            if self._searcher is None or self._searcher[0] != (id(db), model):  # its symbol index kept
                self._searcher = ((id(db), model), CodeSearch(store, vectors, embedder))
            search = self._searcher[1]
            hits = search.search(project, query, k, exclude=exclude, query_vector=vector)
            self.dense_failure = search.dense_failure or ""
            return [_redacted(hit) for hit in hits]

        return await self._reader.run(run)

    async def repo_map(self, *, chat_files: Collection[str] = (), identifiers: Collection[str] = (),
                       budget_tokens: int, count_tokens: Callable[[str], int]) -> RepoMap | None:
        """The map for a turn that talks of `chat_files` and `identifiers`, within `budget_tokens`."""

        def run(db: Database) -> RepoMap | None:
            graph = self._graph_for(db)
            if graph is None:
                return None
            rendered = graph.render(chat_files=chat_files, identifiers=identifiers, budget_tokens=budget_tokens,
                                    count_tokens=count_tokens)
            from ...tools.redact import redact_secrets

            text, found = redact_secrets(rendered.text)  # a constant's line may hold a key
            return dataclasses.replace(rendered, text=text, tokens=count_tokens(text)) if found else rendered

        return await self._reader.run(run)

    async def for_turn(self, query: str, messages: Sequence[Message], cwd: Path, *, k: int, map_tokens: int,
                       count_tokens: Callable[[str], int]) -> TurnCode:
        """What a turn with message `query`, after `messages`, gets: the `k` best chunks the messages do not
        show yet, and the map within `map_tokens`, personalized to the files and identifiers of the recent
        messages and the query, and to the files of the best chunks (nothing when the index has no files)."""
        from ...messages import Message
        from .window import conversation_files, identifiers, window_of

        indexed = await self.paths()
        self.holds_code = bool(indexed)
        if not indexed:
            return TurnCode([], None, [], set(), indexed=False)
        window = window_of(messages, self.root, cwd)
        hits = await self.search(query, k, exclude=window.holds) if query.strip() else []
        recent = [*messages[-RECENT_MESSAGES:], *([Message.user(query)] if query else [])]
        files = conversation_files(recent, self.root, cwd, indexed)
        files += [hit.path for hit in hits[:MAP_FROM_HITS] if hit.path not in files]
        names = identifiers([m.content for m in recent if m.role in ("user", "assistant")])
        rendered = None
        if map_tokens > 0:
            rendered = await self.repo_map(chat_files=files, identifiers=names, budget_tokens=map_tokens,
                                           count_tokens=count_tokens)
        return TurnCode(hits, rendered, files, names)

    async def paths(self) -> list[str]:
        def run(db: Database) -> list[str]:
            store = self._store(db)
            project = store.project(self.root, create=False)
            return sorted(store.files(project)) if project is not None else []

        return await self._reader.run(run)

    def _graph_for(self, db: Database) -> RepoGraph | None:
        from .repo_map import RepoGraph

        store = self._store(db)
        project = store.project(self.root, create=False)
        if project is None:
            return None
        version = store.version(project)
        with self._graph_lock:  # a warm-up building it meanwhile: wait for it rather than build it twice
            if self._graph is None or self._graph[0] != version:
                cached = self._graph_file(db, project, version)
                graph = _read_graph(cached)
                if graph is None:
                    graph = RepoGraph.build(store.tags(project))
                    _keep_graph(graph, cached)
                self._graph = (version, graph)
            return self._graph[1]

    def _graph_file(self, db: Database, project: Project, version: int) -> Path:
        """Where the graph of this version of the project's index is cached: keyed by the database (its
        file and when it was created, so a database made again at the same path is another), the project
        and the version."""
        from ...paths import cache_dir

        stamp = next(iter(db.execute("select min(applied_at) from _zeph_migrations").fetchone() or ("",)))
        from .repo_map import GRAPH_FORMAT

        key = hashlib.sha256(f"{GRAPH_FORMAT}\0{self.db_path}\0{stamp}\0{project.id}\0{project.root}"
                             .encode()).hexdigest()[:16]
        return cache_dir() / "code-index" / f"{key}-{version}.graph"

    # ---- building (a thread of its own) --------------------------------------------

    def build_in_background(self, *, embed: bool = True) -> None:
        """Update the index (then embed what is new) on a thread; returns at once. While a build runs, a
        second request makes it run once more when it ends."""
        with self._build_lock:
            if self._closing.is_set():
                return
            if self._thread is not None:  # running: it runs once more (it decides under this lock)
                self._again.set()
                return
            self._cancel.clear()
            self._thread = self._last_thread = threading.Thread(
                target=self._build_loop, args=(embed,), name="zeph-code-index", daemon=True)
            self._thread.start()

    def _build_loop(self, embed: bool) -> None:
        while True:
            self._again.clear()
            self.build_now(embed=embed)
            with self._build_lock:  # a request made now either sees no build (and starts one) or is run here
                if not self._again.is_set() or self._cancel.is_set() or self._closing.is_set():
                    self._thread = None
                    return

    def build_now(self, *, embed: bool = True, progress: Progress | None = None) -> BuildReport | None:
        """Update (and embed) in this thread, with its own connection; the report, or None on failure (said
        in `state.problem`)."""
        from ...store import open_database
        from .build import embed_missing, update

        state = self.state
        state.running, state.problem = True, ""

        def step(stage: str, done: int, total: int) -> None:
            state.stage, state.done, state.total = stage, done, total
            if progress is not None:
                progress(stage, done, total)

        db = None
        try:
            if self.db_path is None:
                raise RuntimeError("the index needs a database file")
            db = open_database(self.db_path)
            store = self._store(db)
            report = update(store, self.root, settings=self.settings, progress=step, cancel=self._cancel)
            state.report = report
            project = store.project(self.root, create=False)
            self.holds_code = project is not None and store.status(project).chunks > 0
            if embed and not self._cancel.is_set():
                embedder = self.embedder()
                if embedder is not None and project is not None:
                    state.embedded = embed_missing(store, self._vectors_for_build(db), project, embedder,
                                                   progress=step, cancel=self._cancel)
            return report
        except Exception as exc:  # noqa: BLE001 - a build's failure is said, never raised into the app
            state.problem = f"{type(exc).__name__}: {exc}" if not str(exc) else str(exc)
            log.warning("code index build failed: %s", state.problem)
            return None
        finally:
            if db is not None:
                db.close()
            state.running, state.stage = False, ""

    def _vectors_for_build(self, db: Database) -> Any:
        from .vectors import open_code_vectors

        return open_code_vectors(self.config, db)

    def watch(self, debounce_ms: int = 300) -> None:
        """Update the index whenever the project's files change (watchfiles, on a thread; once)."""
        if self._watcher is not None or self._closing.is_set():
            return
        self._watcher = threading.Thread(target=self._watch, args=(debounce_ms,), name="zeph-code-watch", daemon=True)
        self._watcher.start()

    def _watch(self, debounce_ms: int) -> None:
        try:
            from watchfiles import watch
        except ImportError:
            self.state.problem = "watching needs the watchfiles package (pip install watchfiles)"
            return
        try:
            for _ in watch(self.root, debounce=debounce_ms, stop_event=self._closing, raise_interrupt=False):
                self.build_in_background()
        except Exception as exc:
            self.state.problem = f"watching the project stopped: {exc}"
            log.warning("code index watch stopped", exc_info=True)

    def cancel(self) -> None:
        self._cancel.set()

    async def wait_for_build(self) -> None:
        thread = self._last_thread
        if thread is not None:
            await asyncio.to_thread(thread.join)

    def close(self, timeout: float = 5.0) -> None:
        with self._build_lock:
            self._closing.set()
        self.cancel()
        thread = self._last_thread
        if thread is not None and thread.is_alive():
            thread.join(timeout)
        self._reader.close(timeout)


def _read_graph(path: Path) -> RepoGraph | None:
    """The graph a process built for this version of the index, read back (a third of the time building it
    takes); None when there is none or it cannot be read."""
    import pickle

    from .repo_map import RepoGraph

    try:
        with path.open("rb") as handle:
            graph = pickle.load(handle)  # zeph's own cache, in the user's own cache dir
    except (OSError, pickle.PickleError, EOFError, AttributeError, ImportError, TypeError, ValueError):
        return None
    return graph if isinstance(graph, RepoGraph) else None


def _keep_graph(graph: RepoGraph, path: Path) -> None:
    """Save the graph for the next process (best effort); the project's older versions go."""
    import pickle

    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        for old in path.parent.glob(path.name.rsplit("-", 1)[0] + "-*.graph"):
            old.unlink(missing_ok=True)
        temporary = path.with_suffix(f".{os.getpid()}.tmp")
        with temporary.open("wb") as handle:
            pickle.dump(graph, handle, protocol=pickle.HIGHEST_PROTOCOL)
        os.replace(temporary, path)
    except OSError:
        log.debug("code index: the map's graph was not cached", exc_info=True)


def _redacted(hit: Hit) -> Hit:
    """`hit` with any secret in its code replaced by [REDACTED]: the code goes to a model (and a terminal)."""
    from ...tools.redact import redact_secrets

    text, found = redact_secrets(hit.text)
    return dataclasses.replace(hit, text=text) if found else hit
