"""Ranking long-term memories: similarity × 0.5 + confidence × 0.3 + scope priority × 0.2.

Invariant: pure (no I/O, no numpy); the weights are Zeus' ("Profile & Memory
Injection": `similarity×0.5 + confidence×0.3 + scope_priority×0.2`), every term lies
in [0, 1], and `top_k = 0` keeps every memory (ETOS: "no similarity filter, attach
all of them"). Ties go to the most recently updated memory.

Scope priority: the narrower the scope, the more it says about the work at hand —
a session memory (1.0) over a project memory (0.7) over a user-wide one (0.4).
Similarity is the cosine of unit vectors when an embedder made them (negative
cosines count as 0), else `keyword_similarity`, so ranking works without numpy.
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from dataclasses import dataclass

from .long_term_store import Memory

SIMILARITY_WEIGHT = 0.5
CONFIDENCE_WEIGHT = 0.3
SCOPE_WEIGHT = 0.2
SCOPE_PRIORITY = {"session": 1.0, "project": 0.7, "user": 0.4}

_WORD = re.compile(r"[^\W_]+", re.UNICODE)
# Words too common to say what a text is about; kept short on purpose.
_STOPWORDS = frozenset(
    "a an and are as at be but by can do does for from has have how i if in is it its me my no not of on or "
    "our so that the their them then there these they this to was we were what when where which who why will "
    "with you your".split()
)


@dataclass(frozen=True)
class RankedMemory:
    """A saved memory with its similarity to the turn and its final score."""
    memory: Memory
    similarity: float
    score: float

    @property
    def id(self) -> int:
        return self.memory.id

    @property
    def scope(self) -> str:
        return self.memory.scope

    @property
    def content(self) -> str:
        return self.memory.content

    @property
    def confidence(self) -> float:
        return self.memory.confidence


def memory_score(similarity: float, confidence: float, scope: str) -> float:
    """The weighted score of one memory; each input is clamped to [0, 1]."""
    similarity = min(max(similarity, 0.0), 1.0)
    confidence = min(max(confidence, 0.0), 1.0)
    return (
        SIMILARITY_WEIGHT * similarity
        + CONFIDENCE_WEIGHT * confidence
        + SCOPE_WEIGHT * SCOPE_PRIORITY.get(scope, 0.0)
    )


def _stem(word: str) -> str:
    """A light plural fold, enough for `tests`/`test` and `libraries`/`library`."""
    if len(word) > 4 and word.endswith("ies"):
        return word[:-3] + "y"
    if len(word) > 3 and word.endswith("s") and not word.endswith("ss"):
        return word[:-1]
    return word


def keyword_terms(text: str) -> frozenset[str]:
    """The words that say what `text` is about: lower-cased, plurals folded, common words dropped."""
    words = (_stem(w) for w in _WORD.findall(text.lower()))
    return frozenset(w for w in words if w not in _STOPWORDS and (len(w) > 1 or w.isdigit()))


def keyword_similarity(query: str | frozenset[str], text: str) -> float:
    """Cosine of the two texts' word sets: shared words / √(|query words| · |text words|), in [0, 1]."""
    query_terms = keyword_terms(query) if isinstance(query, str) else query
    terms = keyword_terms(text)
    if not query_terms or not terms:
        return 0.0
    return len(query_terms & terms) / math.sqrt(len(query_terms) * len(terms))


def rank_memories(memories: Sequence[Memory], similarities: Sequence[float], top_k: int) -> list[RankedMemory]:
    """The memories best first by `memory_score`, the first `top_k` of them (0 = all)."""
    if len(memories) != len(similarities):
        raise ValueError("one similarity per memory")
    ranked = [
        RankedMemory(m, max(0.0, min(s, 1.0)), memory_score(s, m.confidence, m.scope))
        for m, s in zip(memories, similarities)
    ]
    ranked.sort(key=lambda r: (r.score, r.memory.updated_at, r.memory.id), reverse=True)
    return ranked if top_k <= 0 else ranked[:top_k]
