"""Recall of past messages for one user query: route, search, fuse, decay, diversify, threshold, limit.

Invariant: only messages the agent may see (`agent_visible = 1`, user or
assistant text) are ever returned — compacted originals never — and never one
whose id the caller excludes (what the current window already holds). Vectors
are compared only within the embedder's model. A vector index that is down
degrades the query to keyword search, with a note saying so; nothing here
raises for a recall that finds nothing. The order is a function of the stored
texts and the query alone: vector hits the embedder cannot tell apart (equal
cosines, to float noise) are ordered by the query's words they contain, then
newest first.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Collection
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import TYPE_CHECKING, Any

from .fusion import (
    decay_factor,
    jaccard,
    keyword_coverage,
    mmr,
    normalized,
    reciprocal_rank_fusion,
    terms,
)
from .routing import Route, route as route_of

if TYPE_CHECKING:
    from ..store.sqlite import Database

    from ..config import MemoryConfig
    from .embedders.base import Embedder
    from .vectors.base import VectorIndex

POOL_PER_RESULT, MIN_POOL = 8, 40  # candidates fetched from each backend per result wanted
TIE = 1e-6  # cosines closer than this are equal: float32 noise, or texts of the same tokens
RECALLED_ROLES = ("user", "assistant")


@dataclass(frozen=True)
class RecallHit:
    """A past message recall found, with where it came from and its score."""
    message_id: int
    conversation_id: int
    conversation_title: str
    role: str
    content: str
    created_at: str
    relevance: float  # 0..1: the cosine of a vector hit, the keyword coverage of a keyword hit (the better of both)
    score: float  # the ranking score after fusion and decay
    via: str  # "vector" | "keyword" | "both"


@dataclass(frozen=True)
class RecallResult:
    """What recall found for a query, the route it took and any degradation."""
    route: Route
    hits: tuple[RecallHit, ...] = ()
    note: str = ""  # why recall ran degraded (an index down, an embedder failing), for a one-time warning
    searched: tuple[str, ...] = field(default_factory=tuple)  # the backends actually queried


def _fts_query(query_terms: set[str], *, every: bool) -> str:
    """All terms, as prefixes (a keyword query is short and exact); or any term, whole words only (an OR
    of prefixes matches a large share of a big history, and ranking that many costs tens of ms)."""
    if every:
        return " AND ".join(f'"{t}"*' for t in sorted(query_terms))
    return " OR ".join(f'"{t}"' for t in sorted(query_terms))


def keyword_search(db: "Database", query_terms: set[str], limit: int, *, every: bool) -> list[int]:
    """Agent-visible user/assistant message ids matching the terms (all of them when `every`), best first."""
    if not query_terms:
        return []
    rows = db.execute(
        """
        select m.id from messages_fts
        join messages m on m.rowid = messages_fts.rowid
        where messages_fts match ? and m.agent_visible = 1 and m.role in ('user', 'assistant')
        order by rank limit ?
        """,
        [_fts_query(query_terms, every=every), limit],
    ).fetchall()
    return [r[0] for r in rows]


def _rows(db: "Database", ids: Collection[int]) -> dict[int, dict[str, Any]]:
    if not ids:
        return {}
    marks = ",".join("?" * len(ids))
    cursor = db.execute(
        f"""
        select m.id, m.conversation_id, coalesce(c.title, ''), m.role, m.content, m.created_at
        from messages m left join conversations c on c.id = m.conversation_id
        where m.id in ({marks}) and m.agent_visible = 1 and m.role in ('user', 'assistant')
          and coalesce(m.content, '') != ''
        """,
        list(ids),
    )
    keys = ("id", "conversation_id", "title", "role", "content", "created_at")
    return {row[0]: dict(zip(keys, row)) for row in cursor.fetchall()}


def _age_days(created_at: str, now: datetime) -> float:
    try:
        then = datetime.fromisoformat(created_at)
    except ValueError:
        return 0.0
    if then.tzinfo is None:
        then = then.replace(tzinfo=timezone.utc)
    return (now - then).total_seconds() / 86400


def _ties_settled(
    vector_ids: list[int], cosines: dict[int, float], query_terms: set[str], rows: dict[int, dict[str, Any]]
) -> tuple[list[int], dict[int, float]]:
    """Vector hits best first, and the cosine each ranks by. Hits the embedder cannot tell apart (cosines
    within TIE of the one before; "port 12" and "port 21" are the same tokens to a mean of token vectors)
    rank by the first one's cosine, then by how much of the query's words each contains, then newest
    first: the words decide, and the order never rests on float rounding."""
    ordered = sorted(vector_ids, key=lambda i: -cosines[i])
    lead: dict[int, float] = {}
    for before, i in zip([None, *ordered], ordered):
        lead[i] = lead[before] if before is not None and cosines[before] - cosines[i] <= TIE else cosines[i]
    runs = Counter(lead.values())

    def words_found(i: int) -> float:
        return keyword_coverage(query_terms, rows[i]["content"]) if runs[lead[i]] > 1 else 0.0

    return sorted(ordered, key=lambda i: (-lead[i], -words_found(i), -i)), lead


def recall(
    db: "Database",
    query: str,
    memory: "MemoryConfig",
    *,
    conversation_id: int,
    exclude_ids: Collection[int] = (),
    embedder: "Embedder | None" = None,
    index: "VectorIndex | None" = None,
    now: datetime | None = None,
    query_vector: Any = None,
) -> RecallResult:
    """The best past messages for `query`, at most `recall_limit`, per the spec's pipeline."""
    semantic = memory.semantic
    chosen = route_of(query)
    limit = semantic.recall_limit
    if not query.strip() or limit <= 0:
        return RecallResult(chosen)
    can_vector = embedder is not None and index is not None
    effective = chosen if can_vector else Route.KEYWORD
    note = ""
    pool = max(limit * POOL_PER_RESULT, MIN_POOL)
    exclude = set(exclude_ids)
    query_terms = terms(query)
    vector_ranked: list[tuple[int, float]] = []
    searched: list[str] = []
    if effective in (Route.SEMANTIC, Route.HYBRID):
        from .embedders.base import EmbeddingError
        from .vectors.base import VectorIndexDown

        try:
            vector = query_vector if query_vector is not None else embedder.embed([query])[0]  # type: ignore[union-attr]
            vector_ranked = index.search(embedder.model, vector, pool + len(exclude))  # type: ignore[union-attr]
            searched.append(index.backend)  # type: ignore[union-attr]
        except (VectorIndexDown, EmbeddingError) as exc:
            note = f"semantic recall fell back to keyword search: {exc}"
            effective = Route.KEYWORD
        except Exception as exc:  # noqa: BLE001 — e.g. vectors of another dimension: recall degrades, the turn goes on
            note = f"semantic recall fell back to keyword search: {exc}"
            effective = Route.KEYWORD
    keyword_ids: list[int] = []
    if effective in (Route.KEYWORD, Route.HYBRID):
        keyword_ids = keyword_search(db, query_terms, pool + len(exclude), every=effective is Route.KEYWORD)
        searched.append("fts5")
    cosines = {i: s for i, s in vector_ranked if i not in exclude}
    keyword_ids = [i for i in keyword_ids if i not in exclude]
    rows = _rows(db, set(cosines) | set(keyword_ids))
    vector_ids, ranking_cosine = _ties_settled([i for i, _ in vector_ranked if i in rows and i in cosines],
                                               cosines, query_terms, rows)
    keyword_ids = [i for i in keyword_ids if i in rows]
    coverage = {i: keyword_coverage(query_terms, rows[i]["content"]) for i in keyword_ids}
    relevance = {i: max(cosines.get(i, -1.0), coverage.get(i, -1.0)) for i in rows}
    if effective is Route.SEMANTIC:
        scores = {i: max(ranking_cosine[i], 0.0) for i in vector_ids}
    elif effective is Route.KEYWORD:
        # Coverage first (how much of the query a message answers), the BM25 order among equals.
        ranked = sorted(keyword_ids, key=lambda i: -coverage[i])
        scores = normalized(reciprocal_rank_fusion([(ranked, 1.0)]))
        scores = {i: s * coverage[i] for i, s in scores.items()}
    else:
        scores = normalized(
            reciprocal_rank_fusion([(vector_ids, semantic.vector_weight), (keyword_ids, semantic.keyword_weight)])
        )
    threshold = memory.cross_session_score_threshold
    scores = {
        i: s
        for i, s in scores.items()
        if relevance[i] >= (threshold if rows[i]["conversation_id"] != conversation_id else 1e-9)
    }
    if semantic.temporal_decay_enabled:
        now = now or datetime.now(timezone.utc)
        scores = {
            i: s * decay_factor(_age_days(rows[i]["created_at"], now), semantic.temporal_decay_half_life_days)
            for i, s in scores.items()
        }
    if semantic.mmr_enabled:
        words = {i: terms(rows[i]["content"]) for i in scores}
        order = mmr(scores, lambda a, b: jaccard(words[a], words[b]), semantic.mmr_lambda, limit)
    else:
        order = sorted(scores, key=lambda i: -scores[i])[:limit]
    hits = tuple(
        RecallHit(
            message_id=i,
            conversation_id=rows[i]["conversation_id"],
            conversation_title=rows[i]["title"],
            role=rows[i]["role"],
            content=rows[i]["content"],
            created_at=rows[i]["created_at"],
            relevance=round(relevance[i], 4),
            score=round(scores[i], 6),
            via="both" if i in cosines and i in coverage else ("vector" if i in cosines else "keyword"),
        )
        for i in order
    )
    return RecallResult(chosen, hits, note, tuple(searched))

