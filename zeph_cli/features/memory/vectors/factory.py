"""Choosing the vector index the configuration names.

Invariant: opening an index makes no network request and imports qdrant-client
only for the qdrant backend; an unreachable server shows at the first call.
"""

from __future__ import annotations

from pathlib import Path

from ....store.sqlite import Database

from ....config import Config
from .base import VectorIndex


def open_index(config: Config, db: Database, db_path: Path | str | None) -> VectorIndex:
    """The index for `config.memory.vector_backend` over `db` (the zeph database at `db_path`; the
    sqlite backend keeps its matrix cache at `<db_path>.vectors/`, in memory when `db_path` is None)."""
    backend = config.memory.vector_backend
    if backend == "qdrant":
        from .qdrant_index import QdrantVectorIndex

        return QdrantVectorIndex(db, config.memory.qdrant_url)
    if backend == "sqlite":
        from .sqlite_index import SqliteVectorIndex

        return SqliteVectorIndex(db, db_path)
    raise ValueError(f"memory.vector_backend: unknown backend {backend!r} (sqlite or qdrant)")
