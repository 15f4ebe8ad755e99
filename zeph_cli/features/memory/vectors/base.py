"""The vector index interface recall codes against.

Invariant: an index only ever compares vectors of the model it is asked about;
`search` returns message ids with their cosine similarity, best first, and may
return ids of messages that are no longer agent-visible (callers filter those
against the store). An index that cannot be reached raises `VectorIndexDown`
with a one-line reason; it never hangs past its timeout.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol
from collections.abc import Sequence

from ..vector_table import PendingMessage

if TYPE_CHECKING:
    import numpy as np

__all__ = ["PendingMessage", "VectorIndex", "VectorIndexDown", "VectorRow"]


class VectorIndexDown(Exception):
    """The vector backend cannot be reached or refused the request (one-line reason)."""


@dataclass(frozen=True)
class VectorRow:
    message_id: int
    conversation_id: int
    vector: "np.ndarray"  # float32, L2-normalized


class VectorIndex(Protocol):
    backend: str  # "sqlite" | "qdrant"

    def add(self, model: str, rows: Sequence[VectorRow]) -> None:
        """Store vectors (replacing any for the same message and model) and mark them indexed."""
        ...

    def search(self, model: str, query: "np.ndarray", limit: int) -> list[tuple[int, float]]:
        """The `limit` nearest messages to `query` as (message_id, cosine), best first."""
        ...

    def forget_model(self, model: str) -> int:
        """Drop every vector of `model` (for a reindex); return how many were dropped."""
        ...

    # For the indexer (both backends answer these from SQLite):

    def missing(
        self, model: str, limit: int, roles: Sequence[str] | None = None, since_id: int = 0
    ) -> list[PendingMessage]:
        """Up to `limit` agent-visible messages with non-blank text and no vector of `model` in this
        backend, oldest first (`roles` narrows them, e.g. ("user", "assistant"); `since_id` skips
        messages with smaller ids)."""
        ...

    def missing_count(self, model: str, roles: Sequence[str] | None = None, since_id: int = 0) -> int:
        """How many messages `missing` would list without a limit (a reindex progress bar's total)."""
        ...

    def sync(self, model: str) -> None:
        """Bring any derived state (the sqlite backend's matrix cache) up to date with the database and
        drop what deleted messages left in it; `add` already does this, a conversation deletion does not."""
        ...
