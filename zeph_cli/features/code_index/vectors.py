"""The code index's chunk vectors: in SQLite (BLOBs, searched as one in-process matrix) or in qdrant.

Invariant: a vector is keyed by chunk and embedding model, and a search only compares vectors of the model it
is asked about, within one project; it returns (chunk id, cosine), best first, only for chunks still stored.
`code_vectors` always says which chunks a model has a vector for: the sqlite backend keeps the vector there,
the qdrant backend a row with a null vector, written after its point. The sqlite backend's matrix of a
(project, model) is read once per pair of the project's versions (chunks, vectors), so a warm search is one
matrix product and a partial sort. numpy and qdrant-client are imported only by the backend that uses them.
"""

from __future__ import annotations

import hashlib
import re
import threading
from collections.abc import Callable, Sequence
from functools import partial
from typing import TYPE_CHECKING, Any, Protocol, TypeVar

import numpy as np

from ...store.sqlite import Database
from ..memory.vectors.ranking import top_k, unit_vector
from ...store.transactions import write_transaction
from .store import CodeStore, Project, json_ids

if TYPE_CHECKING:
    from qdrant_client import QdrantClient

    from ...config import Config

UPSERT_BATCH = 256
T = TypeVar("T")


class CodeVectors(Protocol):
    backend: str

    def add(self, model: str, ids: Sequence[int], matrix: np.ndarray) -> None: ...

    def search(self, project: Project, model: str, query_vec: np.ndarray, limit: int) -> list[tuple[int, float]]: ...

    def forget(self, model: str, ids: Sequence[int]) -> None: ...

    def clear(self, project: Project) -> None: ...


def unit_rows(matrix: np.ndarray) -> np.ndarray:
    """`matrix` as float32 rows of length 1 (a zero row stays zero)."""
    m = np.asarray(matrix, dtype=np.float32)
    if m.ndim == 1:
        m = m.reshape(1, -1)
    norms = np.linalg.norm(m, axis=1, keepdims=True)
    return np.where(norms > 0, m / np.where(norms > 0, norms, 1), m).astype(np.float32, copy=False)


def checked_rows(ids: Sequence[int], matrix: np.ndarray) -> np.ndarray:
    """`matrix` as unit rows, one per chunk id (ValueError when the counts differ)."""
    rows = unit_rows(matrix)
    if rows.shape[0] != len(ids):
        raise ValueError(f"{len(ids)} chunk ids for {rows.shape[0]} vectors")
    return rows


def _record(db: Database, model: str, ids: Sequence[int], dim: int, blobs: Sequence[bytes | None]) -> None:
    with write_transaction(db):
        db.conn.executemany(  # a chunk replaced while it was being embedded has nothing to keep
            "insert into code_vectors (chunk_id, model, dim, vector)"
            " select ?1, ?2, ?3, ?4 where exists (select 1 from code_chunks where id = ?1)"
            " on conflict (chunk_id, model) do update set dim = excluded.dim, vector = excluded.vector",
            [(int(i), model, dim, blob) for i, blob in zip(ids, blobs)],
        )
        CodeStore(db).bump_vectors_version(ids)


def _forget_rows(db: Database, model: str, ids: Sequence[int]) -> None:
    with write_transaction(db):
        CodeStore(db).bump_vectors_version(ids)
        db.execute(
            "delete from code_vectors where model = ? and chunk_id in (select value from json_each(?))",
            (model, json_ids(ids)),
        )


def _clear_rows(db: Database, project: Project) -> None:
    with write_transaction(db):
        db.execute(
            "delete from code_vectors where chunk_id in (select c.id from code_chunks c"
            " join code_files f on f.id = c.file_id where f.project_id = ?)",
            (project.id,),
        )
        db.execute("update code_projects set vectors_version = vectors_version + 1 where id = ?", (project.id,))


class SqliteCodeVectors:
    backend = "sqlite"

    def __init__(self, db: Database) -> None:
        self.db = db
        self.store = CodeStore(db)
        self._lock = threading.Lock()
        # (project id, model) -> (chunks version, vectors version, ids, matrix)
        self._matrices: dict[tuple[int, str], tuple[int, int, np.ndarray, np.ndarray]] = {}

    def add(self, model: str, ids: Sequence[int], matrix: np.ndarray) -> None:
        if len(ids) == 0:
            return
        rows = checked_rows(ids, matrix)
        _record(self.db, model, ids, int(rows.shape[1]), [row.tobytes() for row in rows])

    def search(self, project: Project, model: str, query_vec: np.ndarray, limit: int) -> list[tuple[int, float]]:
        ids, matrix = self.matrix(project, model)
        if ids.size == 0 or limit <= 0:
            return []
        query = unit_vector(query_vec)
        if query.shape[0] != matrix.shape[1]:
            raise ValueError(f"a query of {query.shape[0]} dimensions for {model!r} vectors of {matrix.shape[1]}")
        return top_k(ids, matrix @ query, limit)

    def matrix(self, project: Project, model: str) -> tuple[np.ndarray, np.ndarray]:
        """The project's chunk ids and their vectors of `model` (read again only when either changed)."""
        key = (project.id, model)
        versions = self.db.execute(
            "select version, vectors_version from code_projects where id = ?", (project.id,)
        ).fetchone()
        if versions is None:
            return np.zeros(0, dtype=np.int64), np.zeros((0, 0), dtype=np.float32)
        with self._lock:
            cached = self._matrices.get(key)
            if cached is not None and cached[:2] == tuple(versions):
                return cached[2], cached[3]
        rows = self.db.execute(
            "select v.chunk_id, v.dim, v.vector from code_vectors v join code_chunks c on c.id = v.chunk_id"
            " join code_files f on f.id = c.file_id"
            " where f.project_id = ? and v.model = ? and v.vector is not null order by v.chunk_id",
            (project.id, model),
        ).fetchall()
        dims = {dim for _, dim, _ in rows}
        if len(dims) > 1:
            raise ValueError(f"embedding model {model!r}: stored vectors of {sorted(dims)} dimensions")
        dim = dims.pop() if dims else 0
        ids = np.fromiter((row[0] for row in rows), dtype=np.int64, count=len(rows))
        matrix = np.frombuffer(b"".join(row[2] for row in rows), dtype=np.float32).reshape(len(rows), dim)
        with self._lock:
            self._matrices[key] = (int(versions[0]), int(versions[1]), ids, matrix)
        return ids, matrix

    def forget(self, model: str, ids: Sequence[int]) -> None:
        if len(ids):
            _forget_rows(self.db, model, ids)

    def clear(self, project: Project) -> None:
        _clear_rows(self.db, project)
        with self._lock:
            for key in [key for key in self._matrices if key[0] == project.id]:
                del self._matrices[key]


def collection_prefix(root: str) -> str:
    """What the names of a project's collections start with: `zeph_code_<folder>_<hash of root>_`."""
    folder = re.sub(r"[^A-Za-z0-9_-]+", "_", root.rstrip("/").rsplit("/", 1)[-1]).strip("_")[:32] or "root"
    return f"zeph_code_{folder}_{hashlib.sha256(root.encode()).hexdigest()[:10]}_"


def collection_name(root: str, model: str) -> str:
    """The collection of a project's vectors of one model: readable, valid for qdrant, distinct per pair."""
    return collection_prefix(root) + hashlib.sha256(model.encode()).hexdigest()[:8]


class QdrantCodeVectors:
    backend = "qdrant"

    def __init__(self, db: Database, url: str = "", *, client: QdrantClient | None = None) -> None:
        """`client` injects a ready client (qdrant-client's local mode in tests); else one is made for `url`."""
        self.db = db
        self.url = url or "qdrant"
        self._client = client
        self._known: set[str] = set()

    @property
    def client(self) -> QdrantClient:
        if self._client is None:
            from ..memory.vectors.qdrant_connection import connect

            self._client = connect(self.url)
        return self._client

    def add(self, model: str, ids: Sequence[int], matrix: np.ndarray) -> None:
        if len(ids) == 0:
            return
        from qdrant_client import models

        rows = checked_rows(ids, matrix)
        dim = int(rows.shape[1])
        by_root: dict[str, list[int]] = {}
        roots = self._roots_of(ids)
        for position, chunk_id in enumerate(ids):
            root = roots.get(int(chunk_id))
            if root is not None:  # a chunk deleted meanwhile has nothing to keep
                by_root.setdefault(root, []).append(position)
        for root, positions in by_root.items():
            name = collection_name(root, model)
            self._ensure(name, dim)
            for start in range(0, len(positions), UPSERT_BATCH):
                part = positions[start : start + UPSERT_BATCH]
                points = [models.PointStruct(id=int(ids[p]), vector=rows[p].tolist()) for p in part]
                self._call("store vectors in", partial(self.client.upsert, name, points=points, wait=True))
        kept = [int(ids[p]) for positions in by_root.values() for p in positions]
        _record(self.db, model, kept, dim, [None] * len(kept))

    def search(self, project: Project, model: str, query_vec: np.ndarray, limit: int) -> list[tuple[int, float]]:
        if limit <= 0:
            return []
        name = collection_name(project.root, model)
        if not self._exists(name):
            return []
        query = unit_vector(query_vec).tolist()
        response = self._call("search", lambda: self.client.query_points(name, query=query, limit=limit + 16))
        found = [(int(p.id), float(p.score)) for p in response.points]
        recorded = {
            row[0]
            for row in self.db.execute(
                "select chunk_id from code_vectors where model = ? and chunk_id in (select value from json_each(?))",
                (model, json_ids([i for i, _ in found])),
            )
        }
        stale = [i for i, _ in found if i not in recorded]
        if stale:  # points of chunks replaced or forgotten since: dropped as they surface
            self._drop(name, stale)
        return [(i, s) for i, s in found if i in recorded][:limit]

    def forget(self, model: str, ids: Sequence[int]) -> None:
        if len(ids) == 0:
            return
        for root in set(self._roots_of(ids).values()):
            name = collection_name(root, model)
            if self._exists(name):
                self._drop(name, [int(i) for i in ids])
        _forget_rows(self.db, model, ids)

    def clear(self, project: Project) -> None:
        """The project's collections (of every model) and its rows."""
        prefix = collection_prefix(project.root)
        listed = self._call("list", self.client.get_collections).collections
        for name in [c.name for c in listed if c.name.startswith(prefix)]:
            self._call("delete", partial(self.client.delete_collection, name))
            self._known.discard(name)
        _clear_rows(self.db, project)

    # ---- helpers ------------------------------------------------------------------------------------

    def _roots_of(self, ids: Sequence[int]) -> dict[int, str]:
        return {
            int(row[0]): row[1]
            for row in self.db.execute(
                "select c.id, p.root from code_chunks c join code_files f on f.id = c.file_id"
                " join code_projects p on p.id = f.project_id where c.id in (select value from json_each(?))",
                (json_ids(ids),),
            )
        }

    def _exists(self, name: str) -> bool:
        if name in self._known:
            return True
        if self._call("look up", partial(self.client.collection_exists, name)):
            self._known.add(name)
            return True
        return False

    def _ensure(self, name: str, dim: int) -> None:
        if self._exists(name):
            return
        from qdrant_client import models

        config = models.VectorParams(size=dim, distance=models.Distance.COSINE)
        self._call("create", partial(self.client.create_collection, name, vectors_config=config))
        self._known.add(name)

    def _drop(self, name: str, ids: list[int]) -> None:
        from qdrant_client import models

        from ..memory.vectors.base import VectorIndexDown

        try:
            self._call("delete points in", partial(self.client.delete, name,
                                                   points_selector=models.PointIdsList(points=list(ids))))
        except VectorIndexDown:
            pass  # harmless: stale points are filtered out again next time

    def _call(self, doing: str, request: Callable[[], T]) -> T:
        from ..memory.vectors.base import VectorIndexDown
        from ..memory.vectors.qdrant_connection import reason

        try:
            return request()
        except VectorIndexDown:
            raise
        except Exception as exc:  # noqa: BLE001 — any client or transport error is one VectorIndexDown line
            status = getattr(exc, "status_code", None)
            if status is not None:
                raise VectorIndexDown(f"qdrant at {self.url} refused to {doing} the collection: HTTP {status} "
                                      f"{reason(exc)}") from None
            raise VectorIndexDown(f"qdrant at {self.url} is not reachable: {reason(exc)}") from None


def open_code_vectors(config: Config, db: Database, **kwargs: Any) -> CodeVectors:
    """The vectors `config.memory.vector_backend` names, over `db` (no network request is made here)."""
    backend = config.memory.vector_backend
    if backend == "qdrant":
        return QdrantCodeVectors(db, config.memory.qdrant_url, **kwargs)
    if backend == "sqlite":
        return SqliteCodeVectors(db)
    raise ValueError(f"memory.vector_backend: unknown backend {backend!r} (sqlite or qdrant)")
