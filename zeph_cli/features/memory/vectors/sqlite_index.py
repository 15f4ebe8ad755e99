"""The embedded vector index: float32 BLOBs in `message_vectors`, cosine by numpy.

Invariant: the database is the source of truth and the matrix cache beside it
(`<db path>.vectors/`) only ever holds rows the database had; a search sees
every vector stored before it started (the cache's missing tail is read from
the table by rowid) and, until the next write or `sync`, may still return a
message deleted since (the interface allows it; callers filter). Each search
costs one index lookup plus a matrix product over memory-mapped float32 — no
per-row reads — so a fresh process answers in tens of milliseconds at 100k
vectors. Writes verify the cache against the table's row count and rebuild it
whenever rows went missing; a load rebuilds it when a segment fails its checksum,
and a search whose scores are not cosines (NaN, or past ±1: a segment damaged
under its mapping) rebuilds it from the table before it answers. Floating-point
warnings of the matrix product never reach the terminal.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TypeGuard

import numpy as np

from .. import vector_table as table
from ....store.sqlite import Database
from .base import VectorRow
from .ranking import top_k, unit_vector
from .matrix_cache import CachedMatrix, MatrixCache, Segment

REBUILD_ABOVE = 5000  # a search that finds more unsaved rows than this saves the cache it built
COSINE_SLACK = 1e-3  # float32 rounding lets a unit vectors' cosine pass 1 by ~1e-6; garbage passes it by far


class SqliteVectorIndex:
    backend = "sqlite"

    def __init__(self, db: Database, db_path: Path | str | None, *, cache_root: Path | None = None) -> None:
        """`db_path` None (or ":memory:") keeps the matrix in this process only."""
        self.db = db
        if cache_root is None and db_path not in (None, "", ":memory:"):
            cache_root = Path(f"{db_path}.vectors")
        self.cache_root = cache_root
        self._held: dict[str, CachedMatrix] = {}
        self._database_id: str | None = None

    # ---- the VectorIndex interface --------------------------------------------

    def add(self, model: str, rows: Sequence[VectorRow]) -> None:
        """Store `rows` (normalized here), then bring the matrix cache up to date (best effort)."""
        stored = [
            table.StoredVector(r.message_id, r.conversation_id, int(v.shape[0]), v.tobytes())
            for r, v in ((r, unit_vector(r.vector)) for r in rows)
        ]
        table.write_vectors(self.db, model, stored)
        if stored:
            self.sync(model)

    def search(self, model: str, query: np.ndarray, limit: int) -> list[tuple[int, float]]:
        cached = self._current(model)
        if limit <= 0 or cached.size == 0:
            return []
        q = unit_vector(query)
        if q.shape[0] != cached.dim:
            raise ValueError(
                f"the query has {q.shape[0]} dimensions but {model!r} vectors have {cached.dim}; "
                "run `zeph memory reindex --all` after changing the embedding model"
            )
        ids, scores = _scores(cached, q)
        if not _plausible(scores):  # a segment damaged in place under a mapping, past its checksum
            cached = self._replace_damaged(model)
            ids, scores = _scores(cached, q)
            usable = np.abs(scores) <= 1.0 + COSINE_SLACK  # false for NaN: rows the table itself holds broken
            ids, scores = ids[usable], scores[usable]
        return top_k(ids, scores, limit)

    def forget_model(self, model: str) -> int:
        dropped = table.delete_model(self.db, model)
        self._held.pop(model, None)
        if self.cache_root is not None:
            try:
                MatrixCache(self.cache_root, model).clear()
            except OSError:
                pass  # the next reader sees the table emptied and rebuilds anyway
        return dropped

    # ---- for the indexer ------------------------------------------------------

    def missing(
        self, model: str, limit: int, roles: Sequence[str] | None = None, since_id: int = 0
    ) -> list[table.PendingMessage]:
        """Agent-visible messages with text and no vector of `model` here, oldest first."""
        return table.missing_messages(self.db, model, with_vector=True, limit=limit, roles=roles, since_id=since_id)

    def missing_count(self, model: str, roles: Sequence[str] | None = None, since_id: int = 0) -> int:
        return table.missing_count(self.db, model, with_vector=True, roles=roles, since_id=since_id)

    def sync(self, model: str) -> None:
        """Bring the on-disk matrix cache up to date, verified against the table's row count (so rows
        deleted since — a deleted conversation, a replaced vector — leave it, by a rebuild). Never raises
        for the cache: a cache that cannot be written just stays behind."""
        if self.cache_root is None:
            self._held[model] = self._current(model)
            return
        cache = MatrixCache(self.cache_root, model)
        try:
            with cache.locked() as held:
                if held:
                    self._held[model] = self._verified(cache)
        except OSError:
            self._held.pop(model, None)

    # ---- the matrix -----------------------------------------------------------

    def _current(self, model: str) -> CachedMatrix:
        """Every vector of `model` up to the table's newest row: the held or on-disk cache plus the tail."""
        newest = table.newest_rowid(self.db, model)
        cached = self._held.get(model)
        cache = MatrixCache(self.cache_root, model) if self.cache_root is not None else None
        if cache is not None and (cached is None or cached.manifest_stamp != cache.manifest_stamp()):
            loaded = cache.load()
            if loaded is not None and loaded.restamp:  # files hashed, not changed: remember them as checked
                loaded = cache.remember_checked(loaded)
            cached = loaded or cached
        if not _extendable(cached, self.database_id(), newest):
            cached = self._rebuilt(model)
            self._save_if_free(cache, cached)
        elif cached.max_rowid < newest:
            tail_before = cached.rows_seen
            cached = self._with_tail(cached)
            if cached.rows_seen - tail_before > REBUILD_ABOVE:
                self._save_if_free(cache, cached)
        self._held[model] = cached
        return cached

    def _replace_damaged(self, model: str) -> CachedMatrix:
        """The matrix rebuilt from the table after its scores came out impossible; saved when free."""
        from ....log import get_logger

        get_logger("memory").warning(
            "vector cache of %s gave scores outside [-1, 1]: dropped, rebuilt from the database", model
        )
        cached = self._rebuilt(model)
        cache = MatrixCache(self.cache_root, model) if self.cache_root is not None else None
        self._save_if_free(cache, cached)
        self._held[model] = cached
        return cached

    def _verified(self, cache: MatrixCache) -> CachedMatrix:
        """Under the cache lock: the saved cache extended by the table's tail if nothing it holds went
        missing, else rebuilt; saved."""
        model = cache.model
        with table.read_snapshot(self.db):
            state = table.table_state(self.db, model)
            cached = cache.load()
            if cached is not None and _extendable(cached, state.database_id, state.max_rowid):
                extended = self._with_tail(cached)
                if extended.rows_seen == state.rows:
                    if extended.max_rowid == cached.max_rowid:
                        return cached
                    return cache.save(extended)
            return cache.save(self._rebuilt(model))

    def _with_tail(self, cached: CachedMatrix) -> CachedMatrix:
        ids, vectors, newest, count = self._read_rows(cached.model, cached.max_rowid, cached.dim)
        if count == 0:
            return cached
        segment = Segment(np.array(ids, dtype=np.int64), _matrix(vectors, cached.dim))
        return cached.with_segment(segment, max_rowid=newest, rows_seen=cached.rows_seen + count)

    def _rebuilt(self, model: str) -> CachedMatrix:
        dim = table.model_dim(self.db, model) or 0
        with table.read_snapshot(self.db):
            ids, vectors, newest, count = self._read_rows(model, 0, dim)
        segment = Segment(np.array(ids, dtype=np.int64), _matrix(vectors, dim))
        empty = CachedMatrix(self.database_id(), model, dim, 0, 0)
        return empty.with_segment(segment, max_rowid=newest, rows_seen=count)

    def _read_rows(self, model: str, after: int, dim: int) -> tuple[list[int], list[bytes], int, int]:
        """Message ids and vector bytes of `model`'s rows above rowid `after` that hold a `dim` vector;
        the newest rowid read; how many rows were read (vector or not)."""
        ids: list[int] = []
        vectors: list[bytes] = []
        newest, count = after, 0
        for rowid, message_id, row_dim, vector in table.rows_after(self.db, model, after):
            newest, count = rowid, count + 1
            if vector is not None and row_dim == dim and len(vector) == dim * 4:
                ids.append(message_id)
                vectors.append(vector)
        return ids, vectors, newest, count

    def _save_if_free(self, cache: MatrixCache | None, cached: CachedMatrix) -> None:
        if cache is None:
            return
        try:
            with cache.locked(wait=False) as held:
                if held:
                    self._held[cached.model] = cache.save(cached)
        except OSError:
            pass

    def database_id(self) -> str:
        if self._database_id is None:
            self._database_id = table.database_id(self.db)
        return self._database_id


def _extendable(cached: CachedMatrix | None, database_id: str, newest: int) -> TypeGuard[CachedMatrix]:
    """Whether `cached` holds a prefix of this database's rows that the table's tail (rows above its
    `max_rowid`) completes: same database, its newest row not deleted, its dimension known."""
    if cached is None or cached.database_id != database_id or cached.max_rowid > newest:
        return False
    return cached.dim > 0 or cached.max_rowid == newest


def _scores(cached: CachedMatrix, q: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Every cached id and its vector's cosine with the unit `q` (floating-point errors stay silent:
    `_plausible` judges the result)."""
    with np.errstate(all="ignore"):
        if len(cached.segments) == 1:
            return cached.segments[0].ids, cached.segments[0].matrix @ q
        ids = np.concatenate([s.ids for s in cached.segments])
        return ids, np.concatenate([s.matrix @ q for s in cached.segments])


def _plausible(scores: np.ndarray) -> bool:
    """Whether every score is a cosine of unit vectors: finite and within [-1, 1] (NaN fails both)."""
    return not len(scores) or bool(scores.min() >= -1.0 - COSINE_SLACK and scores.max() <= 1.0 + COSINE_SLACK)


def _matrix(vectors: list[bytes], dim: int) -> np.ndarray:
    if not vectors:
        return np.zeros((0, max(dim, 0)), dtype=np.float32)
    return np.frombuffer(b"".join(vectors), dtype=np.float32).reshape(len(vectors), dim)
