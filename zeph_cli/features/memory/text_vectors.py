"""Vectors of short texts kept in memory (skill and MCP tool descriptions), for ranking them against a
message.

Invariant: each (embedder model, text) is embedded once while cached, and the message and the texts not
cached yet go to the embedder in one call; similarities are dot products of the embedder's L2-normalized
rows (cosines). The cache holds at most `limit` texts: past it, it starts again. Synchronous: call it in
a thread.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import numpy as np

    from .embedders.base import Embedder

DEFAULT_LIMIT = 4096


class TextVectors:
    def __init__(self, limit: int = DEFAULT_LIMIT) -> None:
        self.limit = limit
        self._cache: dict[tuple[str, str], np.ndarray] = {}
        self.embedded = 0  # texts embedded so far (the message not counted)

    def __len__(self) -> int:
        return len(self._cache)

    def similarities(self, embedder: Embedder, texts: Sequence[str], message: str) -> list[float]:
        """The cosine similarity of `message` to each of `texts`, in order."""
        if len(self._cache) > self.limit:
            self._cache.clear()
        keys = [(embedder.model, hashlib.sha256(text.encode()).hexdigest()) for text in texts]
        missing = list(dict.fromkeys((key, text) for key, text in zip(keys, texts) if key not in self._cache))
        rows = embedder.embed([message] + [text for _, text in missing])
        for (key, _), row in zip(missing, rows[1:]):
            self._cache[key] = row.copy()  # not a view keeping the whole batch alive
        self.embedded += len(missing)
        query = rows[0]
        return [float(query @ self._cache[key]) for key in keys]
