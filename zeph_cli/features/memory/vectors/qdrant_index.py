"""The qdrant vector index: one collection per embedding model, cosine, point id = message id.

Invariant: qdrant holds the vectors, `message_vectors` (vector NULL) records
which messages are indexed, so what is indexed is answerable from SQLite
alone; a point is written to qdrant before its row is recorded. Search returns
only messages still recorded (points of deleted messages are dropped as they
surface). Every failure to reach or use the server is a `VectorIndexDown` with
one line naming the URL, within about `qdrant_connection.TIMEOUT_S`; qdrant-client is imported
only when this backend is opened.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Callable, Sequence
from functools import partial
from typing import TYPE_CHECKING, TypeVar

import numpy as np
from ....store.sqlite import Database

from .. import vector_table as table
from .base import VectorIndexDown, VectorRow
from .qdrant_connection import connect, reason
from .ranking import unit_vector

if TYPE_CHECKING:
    from qdrant_client import QdrantClient

UPSERT_BATCH = 256
T = TypeVar("T")


def collection_name(model: str) -> str:
    """`zeph_<model, sanitized>_<hash>`: readable, valid for qdrant, and distinct for distinct models."""
    readable = re.sub(r"[^A-Za-z0-9_-]+", "_", model).strip("_")[:48] or "model"
    return f"zeph_{readable}_{hashlib.sha256(model.encode()).hexdigest()[:8]}"

class QdrantVectorIndex:
    backend = "qdrant"

    def __init__(self, db: Database, url: str, *, client: QdrantClient | None = None) -> None:
        """`client` injects a ready client (tests pass qdrant-client's local mode); else one is made for `url`."""
        self.db = db
        self.url = url
        self._client = client
        self._known_collections: set[str] = set()

    @property
    def client(self) -> QdrantClient:
        if self._client is None:
            self._client = connect(self.url)
        return self._client

    # ---- the VectorIndex interface --------------------------------------------

    def add(self, model: str, rows: Sequence[VectorRow]) -> None:
        """Upsert the points, then record the messages as indexed (vector NULL) in `message_vectors`."""
        if not rows:
            return
        from qdrant_client import models

        vectors = [unit_vector(r.vector) for r in rows]
        dims = {int(v.shape[0]) for v in vectors}
        if len(dims) > 1:
            raise ValueError(f"embedding model {model!r}: vectors of {sorted(dims)} dimensions in one batch")
        dim = dims.pop()
        name = collection_name(model)
        self._ensure_collection(name, dim)
        for start in range(0, len(rows), UPSERT_BATCH):
            points = [
                models.PointStruct(id=r.message_id, vector=v.tolist(), payload={"conversation_id": r.conversation_id})
                for r, v in zip(rows[start : start + UPSERT_BATCH], vectors[start : start + UPSERT_BATCH])
            ]
            self._call("store vectors in", partial(self.client.upsert, name, points=points, wait=True))
        table.write_vectors(self.db, model, [table.StoredVector(r.message_id, r.conversation_id, dim, None) for r in rows])

    def search(self, model: str, query: np.ndarray, limit: int) -> list[tuple[int, float]]:
        if limit <= 0:
            return []
        name = collection_name(model)
        if not self._collection_exists(name):
            return []
        q = unit_vector(query).tolist()
        # a few more than asked, so points of deleted messages can be dropped without coming up short
        response = self._call("search", lambda: self.client.query_points(name, query=q, limit=limit + 16))
        found = [(int(p.id), float(p.score)) for p in response.points]
        recorded = table.indexed_ids(self.db, model, [i for i, _ in found])
        stale = [i for i, _ in found if i not in recorded]
        if stale:
            self._drop_points(name, stale)
        return [(i, s) for i, s in found if i in recorded][:limit]

    def forget_model(self, model: str) -> int:
        name = collection_name(model)
        if self._collection_exists(name):
            self._call("delete the collection of", lambda: self.client.delete_collection(name))
        self._known_collections.discard(name)
        return table.delete_model(self.db, model)

    # ---- for the indexer ------------------------------------------------------

    def missing(
        self, model: str, limit: int, roles: Sequence[str] | None = None, since_id: int = 0
    ) -> list[table.PendingMessage]:
        """Agent-visible messages with text not yet recorded as in qdrant for `model`, oldest first."""
        return table.missing_messages(self.db, model, with_vector=False, limit=limit, roles=roles, since_id=since_id)

    def missing_count(self, model: str, roles: Sequence[str] | None = None, since_id: int = 0) -> int:
        return table.missing_count(self.db, model, with_vector=False, roles=roles, since_id=since_id)

    def sync(self, model: str) -> None:
        """Nothing to bring up to date: qdrant is written directly."""

    # ---- helpers --------------------------------------------------------------

    def _collection_exists(self, name: str) -> bool:
        if name in self._known_collections:
            return True
        exists = bool(self._call("look up", lambda: self.client.collection_exists(name)))
        if exists:
            self._known_collections.add(name)
        return exists

    def _ensure_collection(self, name: str, dim: int) -> None:
        if self._collection_exists(name):
            return
        from qdrant_client import models

        config = models.VectorParams(size=dim, distance=models.Distance.COSINE)
        self._call("create a collection in", lambda: self.client.create_collection(name, vectors_config=config))
        self._known_collections.add(name)

    def _drop_points(self, name: str, ids: list[int]) -> None:
        from qdrant_client import models

        selector = models.PointIdsList(points=list(ids))
        try:
            self._call("delete points in", lambda: self.client.delete(name, points_selector=selector))
        except VectorIndexDown:
            pass  # harmless: they are filtered out again next time

    def _call(self, doing: str, request: Callable[[], T]) -> T:
        try:
            return request()
        except VectorIndexDown:
            raise
        except Exception as exc:  # noqa: BLE001 — any client or transport error becomes one VectorIndexDown line
            raise VectorIndexDown(self._describe(doing, exc)) from None

    def _describe(self, doing: str, exc: BaseException) -> str:
        status = getattr(exc, "status_code", None)
        if status is not None:
            return f"qdrant at {self.url} refused to {doing} the collection: HTTP {status} {reason(exc)}"
        return f"qdrant at {self.url} is not reachable: {reason(exc)}"
