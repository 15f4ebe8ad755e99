"""Recall of past messages for one user query: both legs, priors, fusion, the cut, decay, diversity, limit.

Invariant: only messages the agent may see (`agent_visible = 1`, user or
assistant text) are ever returned — compacted originals never, nor a reply
marked as repeating an injected block (`echo` in its metadata) — and never one
whose id the caller excludes (what the current window already holds). Every
query that names something, in any script, runs both legs: FTS5 with any of
its telling words (folded as the index folds them; bm25() order) and the
vector index (its common names left out); each leg is
re-ranked by the messages' information prior, then fused by weighted
reciprocal rank fusion, the router only changing the weights. Vectors are
compared only within the embedder's model. A vector index that is down leaves
the keyword leg, with a note saying so; nothing here raises for a recall that
finds nothing. The order is a function of the stored texts and the query
alone: vector hits the embedder cannot tell apart (equal cosines, to float
noise) are ordered by the query's words they contain, then newest first.
"""

from __future__ import annotations

import math
import re
import sqlite3
import weakref
from collections import Counter
from collections.abc import Collection
from dataclasses import dataclass, field
from datetime import datetime, UTC
from typing import TYPE_CHECKING, Any

from .fusion import (
    PARTS,
    decay_factor,
    fold,
    is_cjk,
    jaccard,
    names_something,
    mmr,
    term_present,
    with_parts,
    normalized,
    reciprocal_rank_fusion,
    terms,
)
from .routing import Route, leg_weights, route as route_of

if TYPE_CHECKING:
    from ...store.sqlite import Database

    from ...config import MemoryConfig
    from .embedders.base import Embedder
    from .vectors.base import VectorIndex

POOL = 50  # candidates fetched from each leg (besides the ids excluded), whatever the limit (100: +0.2 points @5, +30% time)
TIE = 1e-6  # cosines closer than this are equal: float32 noise, or texts of the same tokens
RECALLED_ROLES = ("user", "assistant")
# The priors and cuts below were calibrated on benchmarks/recall_quality.py (evidence recall@5 of the
# default against BM25; what comes back for questions about nothing said).
INFO_HALF = 2.0  # the IDF mass (rarity summed over a message's content words) at which its prior is one half
ROLE_PRIOR = {"user": 1.0, "assistant": 0.85}  # the user's own words first; a reply with content still ranks
COMMON_NAME = 0.5  # a name in the query rarer than this (see TermStats.rarity) stays in the vector leg's query
COMMON_TERM = 0.4  # a query word more common than this is left out of the keyword leg while rarer ones remain
MIN_SUPPORT = 0.1  # a message with no word of the query and a cosine under this is no match at all (an embedder
# may set its own cosine floor as `min_support`: the scale of cosines differs between models)
ALONE_COSINE = 0.35  # when no word of the query occurs in the history at all, the cosine a vector hit needs
SAME_QUESTION = 0.8  # content-word Jaccard from which a past turn is the query asked again
_WORD = re.compile(r"\b[^\W\d_]{2,}\b")  # a word of letters; a name when capitalized (see dense_query)
QUESTION_MARKS = "?？؟"



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
    via: str  # "vector" | "keyword" | "both"; "+answer" (or "answer") for the answer to a repeated question


@dataclass(frozen=True)
class RecallResult:
    """What recall found for a query, the route it took and any degradation."""
    route: Route
    hits: tuple[RecallHit, ...] = ()
    note: str = ""  # why recall ran degraded (an index down, an embedder failing), for a one-time warning
    searched: tuple[str, ...] = field(default_factory=tuple)  # the backends actually queried


def keyword_search(db: "Database", query_terms: set[str], limit: int) -> list[tuple[int, float]]:
    """Agent-visible user/assistant messages holding any of the terms (whole words; a CJK pair as the
    start of a token, as FTS5 keeps a run of CJK characters as one), best first by FTS5's bm25(), with that
    score (higher is better). A query FTS5 refuses finds nothing."""
    if not query_terms:
        return []
    try:
        rows = db.execute(
            """
            select m.id, -bm25(messages_fts) from messages_fts
            join messages m on m.rowid = messages_fts.rowid
            where messages_fts match ? and m.agent_visible = 1 and m.role in ('user', 'assistant')
            order by rank limit ?
            """,
            [" OR ".join(f'"{t}"*' if is_cjk(t) else f'"{t}"' for t in sorted(query_terms)), limit],
        ).fetchall()
    except sqlite3.OperationalError:
        return []
    return [(r[0], float(r[1])) for r in rows]


class TermStats:
    """How rare each word is among the stored messages, from FTS5's own index (a temporary fts5vocab
    table on this connection); looked-up words are kept for the connection's life."""

    CACHE = 200_000

    def __init__(self, db: "Database") -> None:
        self.db = db
        self.df: dict[str, int] = {}
        self.total = 0
        self.counted_at = 0  # the message count when the cached counts were looked up
        self.ok = True

    def _open(self) -> None:
        """The vocabulary table on first use; the message count each time (a look-up of the newest id).
        Counts looked up are forgotten once the history grew by a tenth since they were."""
        if not self.ok:
            return
        try:
            if not self.total:
                self.db.execute("create virtual table if not exists temp.zeph_terms using fts5vocab(main, messages_fts, row)")
            total = int(self.db.execute("select coalesce(max(rowid), 0) from messages").fetchone()[0]) or 1
        except sqlite3.OperationalError:  # an SQLite without fts5vocab: every word counts as rare
            self.ok, self.total = False, 1
            return
        if total > self.counted_at * 1.1:
            self.df.clear()
            self.counted_at = total
        self.total = total

    def seen(self, word: str) -> bool:
        """Whether `word` (or, for a compound word, one of its parts) occurs in any stored message."""
        parts = [p for p in PARTS.split(word) if p] or [word]
        self.rarity(parts)
        return not self.ok or any(self.df.get(p, 0) > 0 for p in parts)

    def rarity(self, words: Collection[str]) -> dict[str, float]:
        """0 (in every message) .. 1 (in none): log((N + 1) / (df + 1)) / log(N + 1); a compound word
        (a path, a dotted name) is as rare as its rarest part."""
        self._open()
        parts = {w: [p for p in PARTS.split(w) if p] or [w] for w in words}
        wanted = sorted({p for ps in parts.values() for p in ps if p not in self.df})
        if wanted and self.ok:
            if len(self.df) > self.CACHE:
                self.df.clear()
            for start in range(0, len(wanted), 400):
                chunk = wanted[start:start + 400]
                marks = ",".join("(?)" for _ in chunk)
                try:
                    rows = self.db.execute(
                        f"with q(t) as (values {marks}) select t, (select doc from temp.zeph_terms where term = q.t) from q",
                        chunk,
                    ).fetchall()
                except sqlite3.OperationalError:
                    self.ok = False
                    break
                self.df.update((t, int(doc or 0)) for t, doc in rows)
        scale = math.log(self.total + 1)
        return {w: max((math.log((self.total + 1) / (self.df.get(p, 0) + 1)) / scale for p in ps), default=1.0)
                for w, ps in parts.items()}


_STATS: "weakref.WeakKeyDictionary[Database, TermStats]" = weakref.WeakKeyDictionary()


def term_stats(db: "Database") -> TermStats:
    stats = _STATS.get(db)
    if stats is None:
        stats = _STATS[db] = TermStats(db)
    return stats


def dense_query(db: "Database", query: str) -> str:
    """The query as the vector leg embeds it: names (capitalized words after the first) that are common
    in the history are left out while other content words remain — a name in most of a history's small
    talk would otherwise make every "Thanks, Dmitri!" the query's nearest neighbour. A name earns its
    place by its rarity (COMMON_NAME)."""
    names = [m for m in _WORD.finditer(query) if m.group()[0].isupper() and m.group()[1:].islower()
             and m.start() > 0 and query[m.start() - 1] not in ".!?。！？\n"]
    if not names:
        return query
    rare = term_stats(db).rarity({fold(m.group()) for m in names})
    common = [m for m in names if rare[fold(m.group())] < COMMON_NAME]
    if not common:
        return query
    kept = query
    for m in reversed(common):
        kept = kept[: m.start()] + kept[m.end():].removeprefix("'s")
    return kept if terms(kept) else query


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
          and not (json_valid(m.metadata) and json_extract(m.metadata, '$.echo') is not null)
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
        then = then.replace(tzinfo=UTC)
    return (now - then).total_seconds() / 86400


def _ties_settled(
    vector_ids: list[int], cosines: dict[int, float], query_terms: set[str], words: dict[int, set[str]]
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
        if runs[lead[i]] <= 1 or not query_terms:
            return 0.0
        found = with_parts(words[i])
        return sum(term_present(t, found) for t in query_terms) / len(query_terms)

    return sorted(ordered, key=lambda i: (-lead[i], -words_found(i), -i)), lead


def information(found: set[str], rarity: dict[str, float]) -> float:
    """The prior of a message for ranking (0..1): the rarity of its content words (stop words and
    pleasantries out), summed — its IDF mass — saturating, one half at INFO_HALF. "Thanks, Dmitri!" (one
    common name) or "ok, sounds good" (no content word) is a small fraction of a message that says
    something. (Weighing the share of stop words on top cost 1.8 points of evidence recall@5.)"""
    mass = sum(rarity.get(t, 1.0) for t in found)
    return mass / (mass + INFO_HALF)


def _same_question(query_terms: set[str], text: str) -> bool:
    """Whether a past message asks what the query asks: a question of (nearly) the same content words."""
    if not any(mark in text for mark in QUESTION_MARKS):
        return False
    found = terms(text)
    return bool(found) and jaccard(found, query_terms) >= SAME_QUESTION


def _answers(db: "Database", rows: dict[int, dict[str, Any]], ids: list[int], exclude: set[int]) -> dict[int, dict[str, Any]]:
    """For each of `ids`, the next agent-visible message of the other side in its session (its answer)."""
    found: dict[int, dict[str, Any]] = {}
    for i in ids:
        row = rows[i]
        other = "assistant" if row["role"] == "user" else "user"
        nxt = db.execute(
            "select id from messages where conversation_id = ? and id > ? and agent_visible = 1 "
            "and role in ('user', 'assistant') order by id limit 1",
            [row["conversation_id"], i],
        ).fetchone()
        if nxt is None or nxt[0] in exclude:
            continue
        answer = _rows(db, [nxt[0]]).get(nxt[0])
        if answer is not None and answer["role"] == other:
            found[i] = answer
    return found


def _answer_cosines(embedder: "Embedder | None", vector: Any, texts: dict[int, str]) -> dict[int, float]:
    """The cosine to the query vector of answers no leg returned (none without a query vector)."""
    if not texts or embedder is None or vector is None:
        return {}
    import numpy as np

    try:
        rows = np.asarray(embedder.embed(list(texts.values())), dtype=np.float32)
    except Exception:  # noqa: BLE001 — a relevance figure only: the answer keeps its words' share
        return {}
    q = np.asarray(vector, dtype=np.float32)
    norms = np.linalg.norm(rows, axis=1) * (float(np.linalg.norm(q)) or 1.0)
    values = (rows @ q) / np.where(norms > 0, norms, 1.0)
    return {i: max(-1.0, min(1.0, float(v))) for i, v in zip(texts, values)}


def _legs(i: int, cosines: Collection[int], bm25: Collection[int], answered: Collection[int]) -> str:
    """Which searches found hit `i`: "vector", "keyword" or "both"; an answer brought in for a repeated
    question adds "answer" to the legs that found it ("answer" alone when neither did)."""
    found = "both" if i in cosines and i in bm25 else ("vector" if i in cosines else ("keyword" if i in bm25 else ""))
    if i in answered:
        return f"{found}+answer" if found else "answer"
    return found


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
    """The best past messages for `query`, at most `recall_limit`: both legs, priors, fusion, the cut."""
    semantic = memory.semantic
    chosen = route_of(query)
    limit = semantic.recall_limit
    query_terms = terms(query)
    if not names_something(query) or limit <= 0:
        return RecallResult(chosen)  # a query naming nothing ("hello there", "continue") recalls nothing
    note = ""
    exclude = set(exclude_ids)
    pool = POOL + len(exclude)
    vector_ranked: list[tuple[int, float]] = []
    vector = None
    searched: list[str] = []
    if embedder is not None and index is not None:
        from .embedders.base import EmbeddingError
        from .vectors.base import VectorIndexDown

        try:
            vector = query_vector if query_vector is not None else embedder.embed([dense_query(db, query)])[0]
            vector_ranked = index.search(embedder.model, vector, pool)
            searched.append(index.backend)
        except (VectorIndexDown, EmbeddingError) as exc:
            note = f"semantic recall fell back to keyword search: {exc}"
        except Exception as exc:  # noqa: BLE001 — e.g. vectors of another dimension: recall degrades, the turn goes on
            note = f"semantic recall fell back to keyword search: {exc}"
    query_rarity = term_stats(db).rarity(query_terms)
    telling = {t for t in query_terms if query_rarity[t] >= COMMON_TERM} or query_terms
    keyword_ranked = keyword_search(db, telling, pool)
    searched.append("fts5")
    cosines = {i: s for i, s in vector_ranked if i not in exclude}
    bm25 = {i: s for i, s in keyword_ranked if i not in exclude}
    rows = _rows(db, set(cosines) | set(bm25))
    if not rows:
        return RecallResult(chosen, (), note, tuple(searched))
    words = {i: terms(rows[i]["content"]) for i in rows}
    rarity = term_stats(db).rarity(set().union(*words.values()) | query_terms)
    prior = {i: information(words[i], rarity) * ROLE_PRIOR.get(rows[i]["role"], 1.0) for i in rows}
    vector_ids, ranking_cosine = _ties_settled([i for i, _ in vector_ranked if i in rows and i in cosines],
                                               cosines, query_terms, words)
    vector_order = sorted(vector_ids, key=lambda i: -(max(ranking_cosine[i], 0.0) * prior[i]))
    keyword_order = sorted((i for i in bm25 if i in rows), key=lambda i: -(bm25[i] * prior[i]))
    wv, wk = leg_weights(chosen, semantic.vector_weight, semantic.keyword_weight)
    fused = reciprocal_rank_fusion([(vector_order, wv), (keyword_order, wk)])
    # A past turn that asks what the query asks is no news: its answer takes its place when the answer
    # says more than the question, else it goes.
    same = [i for i in fused if _same_question(query_terms, rows[i]["content"])]
    answered: dict[int, int] = {}  # an answer brought in -> the question it answers
    if same:
        answers = _answers(db, rows, same, exclude)
        for i in same:
            score = fused.pop(i)
            answer = answers.get(i)
            if answer is None or not (words.setdefault(answer["id"], terms(answer["content"])) - query_terms):
                continue
            rows.setdefault(answer["id"], answer)
            prior.setdefault(answer["id"], information(words[answer["id"]], rarity))
            fused[answer["id"]] = max(fused.get(answer["id"], 0.0), score)  # it ranks where its question did
            answered[answer["id"]] = i
    own_cosine = _answer_cosines(embedder, vector, {a: rows[a]["content"] for a in answered if a not in cosines})
    if not fused:
        return RecallResult(chosen, (), note, tuple(searched))
    total = sum(query_rarity[t] for t in query_terms) or 1.0
    def cosine_and_said(i: int) -> tuple[float, float]:
        found = with_parts(words[i])
        return cosines.get(i, 0.0), sum(query_rarity[t] for t in query_terms if term_present(t, found)) / total

    support: dict[int, float] = {}
    best = max(fused.values())
    threshold = best * memory.cross_session_score_threshold
    # no word of the query in the history (a CJK pair has no token of its own: the keyword leg says)
    alone = not any(term_stats(db).seen(t) for t in query_terms if not is_cjk(t)) and not (
        keyword_ranked and any(is_cjk(t) for t in query_terms))
    said_floor = ALONE_COSINE if alone else MIN_SUPPORT
    # the cosine floor is in the embedder's own scale (a sentence encoder's unrelated pairs sit higher)
    cosine_floor = ALONE_COSINE if alone else getattr(embedder, "min_support", MIN_SUPPORT)
    # best first; with neither MMR nor decay to reorder them, the first `limit` that pass are the answer
    reorders = semantic.mmr_enabled or semantic.temporal_decay_enabled
    scores: dict[int, float] = {}
    for i in sorted(fused, key=lambda i: (-fused[i], -i)):
        if not reorders and len(scores) >= limit:
            break
        # an answer brought in for a repeated question passes the cut as its question would, but its
        # relevance is its own: its cosine to the query (embedded if no leg found it) or its share of words
        cosine, said = cosine_and_said(answered[i] if answered.get(i) in rows else i)
        support[i] = max(cosine, said) if i not in answered else max(own_cosine.get(i, 0.0), *cosine_and_said(i))
        if rows[i]["conversation_id"] == conversation_id or (
            fused[i] >= threshold and (cosine >= cosine_floor or said >= said_floor)
        ):
            scores[i] = fused[i]
    if semantic.temporal_decay_enabled:
        now = now or datetime.now(UTC)
        scores = {
            i: s * decay_factor(_age_days(rows[i]["created_at"], now), semantic.temporal_decay_half_life_days)
            for i, s in scores.items()
        }
    if semantic.mmr_enabled:
        top = normalized(scores)
        order = mmr(top, lambda a, b: jaccard(words[a], words[b]), semantic.mmr_lambda, limit)
    else:
        order = sorted(scores, key=lambda i: (-scores[i], -i))[:limit]
    hits = tuple(
        RecallHit(
            message_id=i,
            conversation_id=rows[i]["conversation_id"],
            conversation_title=rows[i]["title"],
            role=rows[i]["role"],
            content=rows[i]["content"],
            created_at=rows[i]["created_at"],
            relevance=round(support[i], 4),  # its cosine, or the rarity-weighted share of the query it holds
            score=round(scores[i], 6),
            via=_legs(i, cosines, bm25, answered),
        )
        for i in order
    )
    return RecallResult(chosen, hits, note, tuple(searched))
