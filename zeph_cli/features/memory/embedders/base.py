"""The embedder interface every recall and memory component codes against.

Invariant: `embed` returns one L2-normalized float32 row per text, in order, so a
dot product is the cosine similarity; `model` names the model exactly enough that
vectors made with different models are never compared (it is stored with them).
Calls are synchronous (callers run them in a thread) and raise `EmbeddingError`
with a one-line reason on any failure.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import TYPE_CHECKING, Generic, Protocol, TypeVar

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


Files = TypeVar("Files")


class LoadOnce(Generic[Files]):
    """What `open_files` returns, made once by whichever thread asks first (a background warm-up or a turn);
    an `EmbeddingError` it raised is raised again on every later call, so a missing package or a damaged
    file is one line each time, not a new attempt per message."""

    def __init__(self, open_files: Callable[[], Files]) -> None:
        self._open_files = open_files
        self._lock = threading.Lock()
        self._files: Files | None = None
        self._failure: EmbeddingError | None = None

    @property
    def done(self) -> bool:
        return self._files is not None

    def get(self) -> Files:
        files = self._files
        if files is not None:
            return files
        with self._lock:
            if self._files is None:
                if self._failure is not None:
                    raise self._failure
                try:
                    self._files = self._open_files()
                except EmbeddingError as exc:
                    self._failure = exc
                    raise
            return self._files
