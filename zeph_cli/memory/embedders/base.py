"""The embedder interface every recall and memory component codes against.

Invariant: `embed` returns one L2-normalized float32 row per text, in order, so a
dot product is the cosine similarity; `model` names the model exactly enough that
vectors made with different models are never compared (it is stored with them).
Calls are synchronous (callers run them in a thread) and raise `EmbeddingError`
with a one-line reason on any failure.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    import numpy as np


class EmbeddingError(Exception):
    """The embedder could not embed: its one-line reason names the model and what went wrong."""


class Embedder(Protocol):
    model: str  # e.g. "wordllama/l2_supercat_256", "openai/text-embedding-3-small"
    # Optional: `min_support`, the cosine under which recall counts a hit sharing no word with the query
    # as no match, in this model's scale (recall.MIN_SUPPORT when absent).

    def embed(self, texts: list[str]) -> "np.ndarray":
        """(len(texts), dim) float32, rows L2-normalized."""
        ...
