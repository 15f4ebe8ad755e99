"""Ranking arithmetic for recall: reciprocal rank fusion, temporal decay, MMR, relevance.

Invariant: pure functions over plain values (ids, ranks, scores, unit vectors as
sequences of floats, token sets); nothing here touches the store, an index or
an embedder, and nothing imports numpy.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Mapping, Sequence

RRF_K = 60  # the constant of Cormack et al.'s reciprocal rank fusion, as commonly used

STOPWORDS = frozenset(
    """a an the and or but if then else of to in on at by for with from into onto about as is are was were be been
    being am do does did doing have has had having it its this that these those there here i me my mine we us our
    you your yours he him his she her they them their what which who whom whose when where why how can could should
    would will shall may might must not no yes so too very just also than please thanks thank ok okay hi hello hey
    all any some each more most much many few one tell say said remind recall remember again still already now""".split()
) | frozenset(
    # Conversation control: the short follow-ups of a working session ("continue", "fix it", "run the
    # tests", "looks good") name no topic, so they must never pull up other sessions' messages.
    """continue go ahead fix run test tests try do make check look looks see show sure done next start stop
    use add update change keep let lets get got need want like think know good great fine right well work
    works working it's that's thats doesn't don't didn't isn't same other another way thing things something
    ok lgtm perfect nice cool yep nope yeah""".split()
)
PARTS = re.compile(r"[.:/-]")
_TERM = re.compile(r"[A-Za-z0-9_]+(?:[.:/-][A-Za-z0-9_]+)*")


def terms(text: str) -> set[str]:
    """The content words of `text`, lower-cased, stopwords and one-letter words out."""
    return {t for t in (m.lower() for m in _TERM.findall(text)) if len(t) > 1 and t not in STOPWORDS}


def keyword_coverage(query_terms: set[str], text: str) -> float:
    """Share of the query's content words that `text` contains (0..1): the relevance of a keyword hit."""
    if not query_terms:
        return 0.0
    found = with_parts(terms(text))
    return sum(1 for t in query_terms if term_present(t, found)) / len(query_terms)


def with_parts(found: set[str]) -> set[str]:
    """`found` and the parts of its compound words (a path's parts, as FTS5 splits it)."""
    return found | {part for word in found for part in PARTS.split(word) if part}


def term_present(term: str, found: set[str]) -> bool:
    """Whether a query word is among a text's words (`with_parts(terms(text))`): itself, as a prefix of
    one (run in running), or, for a compound word, every one of its parts."""
    if term in found or any(w.startswith(term) for w in found):
        return True
    parts = [p for p in PARTS.split(term) if p]
    return len(parts) > 1 and all(p in found for p in parts)


def reciprocal_rank_fusion(rankings: Sequence[tuple[Sequence[int], float]], k: int = RRF_K) -> dict[int, float]:
    """Σ weight / (k + rank) over the rankings (rank from 1) each id appears in."""
    fused: dict[int, float] = {}
    for ids, weight in rankings:
        for rank, item in enumerate(ids, start=1):
            fused[item] = fused.get(item, 0.0) + weight / (k + rank)
    return fused


def decay_factor(age_days: float, half_life_days: float) -> float:
    """Exponential attenuation: 1 for a message from now, ½ after one half-life."""
    return 0.5 ** (max(age_days, 0.0) / half_life_days)


def normalized(scores: Mapping[int, float]) -> dict[int, float]:
    """Scores divided by the best one (so the top is 1.0); empty stays empty."""
    top = max(scores.values(), default=0.0)
    return {i: (s / top if top > 0 else 0.0) for i, s in scores.items()}


def jaccard(a: set[str], b: set[str]) -> float:
    return len(a & b) / len(a | b) if a or b else 0.0


def mmr(
    scores: Mapping[int, float],
    similarity: Callable[[int, int], float],
    lam: float,
    limit: int,
) -> list[int]:
    """Maximal Marginal Relevance: pick, one at a time, the id maximizing
    λ·score − (1−λ)·max similarity to those already picked. Ties keep score order."""
    remaining = sorted(scores, key=lambda i: -scores[i])
    picked: list[int] = []
    while remaining and len(picked) < limit:
        def marginal(i: int) -> float:
            redundancy = max((similarity(i, j) for j in picked), default=0.0)
            return lam * scores[i] - (1 - lam) * redundancy

        best = max(remaining, key=marginal)  # max keeps the first of equals: score order
        picked.append(best)
        remaining.remove(best)
    return picked


def cosine(a: Sequence[float], b: Sequence[float]) -> float:
    """Dot product of two unit vectors (the cosine); 0 for mismatched or empty ones."""
    if len(a) != len(b) or not a:
        return 0.0
    value = math.fsum(x * y for x, y in zip(a, b))
    return max(-1.0, min(1.0, value))
