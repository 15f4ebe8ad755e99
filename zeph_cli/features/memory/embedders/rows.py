"""Vectors as the embedder contract wants them: float32 rows of unit length, one per text.

Invariant: `unit_rows` never produces NaN — a zero row stays zero — and every other
row comes out with an L2 norm of 1; `embed_in_batches` returns exactly one row per
text, in order, or raises.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np


def unit_rows(rows: np.ndarray | Sequence[Sequence[float]]) -> np.ndarray:
    """`rows` as a C-contiguous float32 matrix, each non-zero row scaled to length 1."""
    matrix = np.array(rows, dtype=np.float32, copy=True, ndmin=2)
    norms = np.linalg.norm(matrix, axis=1, keepdims=True)
    np.divide(matrix, norms, out=matrix, where=norms > 0)
    return np.ascontiguousarray(matrix)


def embed_in_batches(
    texts: Sequence[str],
    embed_batch: Callable[[list[str]], list[list[float]]],
    *,
    batch_size: int,
    max_chars: int,
    bad_reply: Callable[[str], Exception],
    dimensions: int = 0,
) -> np.ndarray:
    """Embed `texts` through `embed_batch`, `batch_size` at a time, each cut at `max_chars`.

    Blank texts are not sent (endpoints reject empty input): their rows are zero, of the
    width the other rows have (`dimensions` when every text is blank). A reply with the
    wrong number of rows, or rows of different widths, raises `bad_reply(detail)`.
    """
    sent = [i for i, text in enumerate(texts) if text.strip()]
    vectors: list[list[float]] = []
    for start in range(0, len(sent), batch_size):
        batch = [texts[i][:max_chars] for i in sent[start : start + batch_size]]
        reply = embed_batch(batch)
        if len(reply) != len(batch):
            raise bad_reply(f"{len(reply)} embeddings for {len(batch)} inputs")
        vectors.extend(reply)
    widths = {len(vector) for vector in vectors}
    if len(widths) > 1 or 0 in widths:
        raise bad_reply(f"embeddings of different sizes ({sorted(widths)})")
    width = widths.pop() if widths else dimensions
    matrix = np.zeros((len(texts), width), dtype=np.float32)
    if vectors:
        matrix[sent] = vectors
    return unit_rows(matrix)
