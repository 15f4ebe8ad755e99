"""Embedding the messages a vector index does not hold yet, in batches.

Invariant: only agent-visible user and assistant text is embedded, each
message once per embedding model; a batch is stored only whole, so an
interrupted run resumes where it stopped and never leaves a message half done.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from .recall import RECALLED_ROLES

if TYPE_CHECKING:
    from .embedders.base import Embedder
    from .vectors.base import VectorIndex

INDEX_BATCH = 256


def embed_pending(
    index: "VectorIndex", embedder: "Embedder", progress: Callable[[int, int], Any] | None = None
) -> int:
    """Embed every pending message; `progress(done, total)` after each batch. Returns how many were embedded."""
    from .vectors.base import VectorRow

    model = embedder.model
    total = index.missing_count(model, RECALLED_ROLES) if progress is not None else 0
    done = 0
    while True:
        batch = index.missing(model, INDEX_BATCH, RECALLED_ROLES)
        if not batch:
            return done
        vectors = embedder.embed([pending.content for pending in batch])
        index.add(model, [VectorRow(p.message_id, p.conversation_id, vectors[n]) for n, p in enumerate(batch)])
        done += len(batch)
        if progress is not None:
            progress(done, max(total, done))
