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
# Pending messages read per scan. Finding them walks the stored messages (~0.2 s at 100k), so a scan
# reads many at once, and a page that comes back short ends the pass without another.
PENDING_PAGE = 2048


def embed_pending(
    index: "VectorIndex",
    embedder: "Embedder",
    progress: Callable[[int, int], Any] | None = None,
    *,
    since_id: int = 0,
    should_stop: Callable[[], bool] = lambda: False,
) -> int:
    """Embed every pending message (with an id from `since_id` on); `progress(done, total)` after each
    batch; `should_stop()` is asked between batches. Returns how many were embedded."""
    from .vectors.base import VectorRow

    model = embedder.model
    total = index.missing_count(model, RECALLED_ROLES, since_id) if progress is not None else 0
    done = 0
    while True:
        page = index.missing(model, PENDING_PAGE, RECALLED_ROLES, since_id)
        for start in range(0, len(page), INDEX_BATCH):
            if should_stop():
                return done
            batch = page[start : start + INDEX_BATCH]
            vectors = embedder.embed([pending.content for pending in batch])
            index.add(model, [VectorRow(p.message_id, p.conversation_id, vectors[n]) for n, p in enumerate(batch)])
            done += len(batch)
            if progress is not None:
                progress(done, max(total, done))
        if len(page) < PENDING_PAGE:
            return done
