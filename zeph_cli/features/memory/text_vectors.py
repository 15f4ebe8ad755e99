"""Vectors of short texts kept in memory (skill and MCP tool descriptions), for ranking them against a
message.

Invariant: each (embedder model, text) is embedded once while cached, and the texts not cached yet go to
the embedder in one call; the message is the turn's prompt, embedded once per embedder however many
rankers ask for it at once (`prompt_vector`: recall and memories, skills and MCP discovery all rank by
it); similarities are dot products of the embedder's L2-normalized rows (cosines). The cache holds at
most `limit` texts: past it, it starts again. Synchronous: call it in a thread.
"""

from __future__ import annotations

import hashlib
import threading
import weakref
from collections.abc import Sequence
from concurrent.futures import Future
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
        query = prompt_vector(embedder, message)
        if missing:
            rows = embedder.embed([text for _, text in missing])
            for (key, _), row in zip(missing, rows):
                self._cache[key] = row.copy()  # not a view keeping the whole batch alive
        self.embedded += len(missing)
        return [float(query @ self._cache[key]) for key in keys]


    def known(self, model: str) -> dict[str, np.ndarray]:
        """The vectors held for `model`, by the sha256 of their text (to keep them across processes)."""
        return {digest: row for (name, digest), row in self._cache.items() if name == model}

    def add(self, model: str, rows: dict[str, np.ndarray]) -> None:
        """Vectors `model` made earlier, by the sha256 of their text: held as if embedded here."""
        self._cache.update(((model, digest), row) for digest, row in rows.items())


class _LastPrompt:
    """The last text `prompt_vector` was asked for with one embedder, and its vector (to come)."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.text: str | None = None
        self.vector: Future[np.ndarray] | None = None


_LAST: "weakref.WeakKeyDictionary[object, _LastPrompt]" = weakref.WeakKeyDictionary()
_LAST_LOCK = threading.Lock()


def prompt_vector(embedder: Embedder, text: str) -> np.ndarray:
    """`embedder`'s row for `text`, the turn's prompt: the first caller embeds it, a caller asking for the
    same text meanwhile or later waits for that row instead of embedding it again (only the last text is
    kept, per embedder). An embedder's row for a text does not depend on the texts embedded with it, so
    the row is the one each caller would have made. A failure is raised to every caller waiting for it and
    not kept: the next caller tries again. Synchronous: call it in a thread. Callers must not modify the row."""
    try:
        with _LAST_LOCK:
            last = _LAST.setdefault(embedder, _LastPrompt())
    except TypeError:  # an embedder that cannot be weakly referenced: no sharing
        return embedder.embed([text])[0]
    with last.lock:
        vector, mine = last.vector, last.text != text or last.vector is None
        if mine:
            vector = last.vector = Future()
            last.text = text
    assert vector is not None
    if not mine:
        return vector.result()
    try:
        row = embedder.embed([text])[0].copy()  # not a view keeping the whole batch alive
    except BaseException as exc:
        with last.lock:
            if last.vector is vector:
                last.text, last.vector = None, None
        vector.set_exception(exc)
        raise
    vector.set_result(row)
    return row
