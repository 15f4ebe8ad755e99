"""Ranking by cosine: unit vectors, and the best scores in a stable order.

Invariant: pure numpy; equal scores (within TIE) always come in one order, newest (highest id) first,
whatever order a selection algorithm or a BLAS kernel left them in. Shared by recall's and the code
index's vector searches.
"""

from __future__ import annotations

import numpy as np

# Cosines closer than this are one score: float32 products of two equal vectors differ by a few ulps
# with their rows' places in the matrix (the BLAS kernel's blocks), and texts that are the same tokens in
# another order ("port 12", "port 21") are one vector to the embedded model.
TIE = 1e-6


def unit_vector(vector: np.ndarray) -> np.ndarray:
    """`vector` as a 1-D float32 array of length 1 (a zero vector stays zero). ValueError when unusable."""
    v = np.asarray(vector, dtype=np.float32).reshape(-1)
    if v.size == 0 or not np.all(np.isfinite(v)):
        raise ValueError("a vector must be non-empty and finite")
    norm = float(np.linalg.norm(v))
    return v / norm if norm > 0 else v


def top_k(ids: np.ndarray, scores: np.ndarray, limit: int) -> list[tuple[int, float]]:
    """The `limit` best (id, score) pairs, best first; scores within TIE of the one before them are one
    run, newest (highest id) first, so equal vectors never come in the order a selection algorithm or a
    BLAS kernel left them. (A partition finds the limit-th best score; every row within TIE of it is
    sorted, so a run that straddles the cut is cut by age too.)"""
    if limit <= 0:
        return []
    if limit < len(scores):
        cut = np.partition(scores, len(scores) - limit)[len(scores) - limit]
        best = np.flatnonzero(scores >= cut - TIE)
    else:
        best = np.arange(len(scores))
    best = best[np.argsort(-scores[best], kind="stable")]
    run = np.concatenate(([0], np.cumsum(np.diff(scores[best]) < -TIE)))  # a new run where a score drops by more
    best = best[np.lexsort((-ids[best], run))[:limit]]
    return [(int(ids[i]), float(scores[i])) for i in best]
