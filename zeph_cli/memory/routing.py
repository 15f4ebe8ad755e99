"""Query-aware memory routing: which backends a recall query goes to (Zeph's HeuristicRouter).

Invariant: pure and deterministic — the route depends on the query's text only.
Relationship patterns win over everything (and fall back to hybrid: zeph has no
graph store); then code patterns and identifiers go to keyword search, questions
and long queries to vectors, short queries to keywords, the rest to both.
"""

from __future__ import annotations

import re
from enum import Enum


class Route(str, Enum):
    KEYWORD = "keyword"  # SQLite FTS5 only: needs no embedder
    SEMANTIC = "semantic"  # vectors only
    HYBRID = "hybrid"  # both, fused with reciprocal rank fusion


QUESTION_WORDS = frozenset(
    "what how why when where who whom whose which does do did is are was were can could should would "
    "will shall may might explain describe tell remind recall remember".split()
)
_RELATIONSHIP = re.compile(
    r"\b(related to|relationship between|connection between|connected to|opinion (?:on|of|about)|know about|"
    r"think (?:of|about))\b",
    re.IGNORECASE,
)
_CODE = re.compile(r"::|/|\\|->|=>|\(\)|\w\.\w+\(|[{}\[\]<>]|`")
_SNAKE = re.compile(r"^[a-z0-9]+(?:_[a-z0-9]+)+$")
_CAMEL = re.compile(r"^[a-z]+[A-Z]\w*$|^[A-Z][a-z0-9]+[A-Z]\w*$")
_WORD = re.compile(r"[\w'-]+")

SHORT_QUERY_WORDS = 3  # spec: "short queries (<=3 words without question words)"
LONG_QUERY_WORDS = 6  # spec: "long queries (>=6 words)"


def words(query: str) -> list[str]:
    return _WORD.findall(query)


def is_identifier(query: str) -> bool:
    """A bare snake_case (or camelCase) identifier: what a keyword index finds and a vector blurs."""
    text = query.strip().strip("`'\"")
    return bool(_SNAKE.match(text) or _CAMEL.match(text))


def route(query: str) -> Route:
    """The spec's heuristic, in its priority order."""
    text = query.strip()
    found = words(text)
    lowered = [w.lower() for w in found]
    if _RELATIONSHIP.search(text):
        return Route.HYBRID  # the graph route, without a graph store
    if _CODE.search(text) or is_identifier(text):
        return Route.KEYWORD
    question = text.endswith("?") or bool(lowered and lowered[0] in QUESTION_WORDS)
    if question or len(found) >= LONG_QUERY_WORDS:
        return Route.SEMANTIC
    if len(found) <= SHORT_QUERY_WORDS:
        return Route.KEYWORD
    return Route.HYBRID
