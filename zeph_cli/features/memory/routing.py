"""Query-aware weighting of recall's two legs: how much the keyword ranks count against the vector ranks.

Invariant: pure and deterministic — the route depends on the query's text only,
and it only weighs: both legs (FTS5 and vectors) run for every query, so no
query loses a leg's hits by being routed away from it. Code patterns,
identifiers, paths and quoted text favour the keyword leg (a vector blurs
them); everything else is fused with the configured weights.
"""

from __future__ import annotations

import re
from enum import Enum


class Route(str, Enum):
    KEYWORD = "keyword"  # the keyword leg's ranks weigh KEYWORD_FAVOUR times more
    HYBRID = "hybrid"  # vector_weight and keyword_weight as configured


# The router's spec words, kept to tell a question from a fragment in `zeph context`.
QUESTION_WORDS = frozenset(
    "what how why when where who whom whose which does do did is are was were can could should would "
    "will shall may might explain describe tell remind recall remember".split()
)
_CODE = re.compile(r"::|/|\\|->|=>|\(\)|\w\.\w+\(|[{}\[\]<>]|`|\b\w+\.(?:py|rs|js|ts|go|md|toml|json|ya?ml|conf|sh|c|h)\b")
_QUOTED = re.compile(r"\"[^\"]{2,}\"|'[^']{2,}'(?!\w)|«[^»]{2,}»|“[^”]{2,}”|„[^“”]{2,}[“”]|「[^」]{2,}」")
_SNAKE = re.compile(r"\b[a-z0-9]+(?:_[a-z0-9]+)+\b")
_CAMEL = re.compile(r"\b(?:[a-z]+[A-Z]\w*|[A-Z][a-z0-9]+[A-Z]\w*)\b")
_WORD = re.compile(r"[\w'-]+")

KEYWORD_FAVOUR = 3.0  # keyword_weight is multiplied by this on the keyword route


def words(query: str) -> list[str]:
    return _WORD.findall(query)


def is_identifier(query: str) -> bool:
    """A bare snake_case (or camelCase) identifier: what a keyword index finds and a vector blurs."""
    text = query.strip().strip("`'\"")
    return bool(_SNAKE.fullmatch(text) or _CAMEL.fullmatch(text))


def route(query: str) -> Route:
    """KEYWORD when the query holds code, a path, a file name, an identifier or quoted text; else HYBRID."""
    text = query.strip()
    if _CODE.search(text) or _QUOTED.search(text) or _SNAKE.search(text) or _CAMEL.search(text):
        return Route.KEYWORD
    return Route.HYBRID


def leg_weights(chosen: Route, vector_weight: float, keyword_weight: float) -> tuple[float, float]:
    """(vector, keyword) weights of reciprocal rank fusion for a query on `chosen`."""
    if chosen is Route.KEYWORD:
        return vector_weight, keyword_weight * KEYWORD_FAVOUR
    return vector_weight, keyword_weight
