"""Code search: the chunks of a project that answer a question, BM25 over identifier words fused with vectors.

Invariant: reads only (the store, the vectors, the embedder the caller gives). The lexical ranking is the
store's FTS5 BM25 over the query's `words` (identifiers split as the index splits them); the dense ranking
is the chunks' vectors by cosine to the query's; the two are fused by reciprocal rank fusion, the dense one
at `DENSE_WEIGHT`, so a chunk without a vector still ranks by its words and a search with no vectors or
no embedder is lexical alone. A query that names code (`is_code_query`: an identifier with `_` or
camelCase humps, a dotted name, a call, a path, a file name) also ranks the chunks that define a name it
names, or are in a file it names, first. Chunks the caller excludes (already in its window) are not hits.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass

# A name people write only for code: snake_case (or _private, CONSTANT_CASE), camelCase, PascalCase with two
# humps (CodeStore, HTTPServer), a dotted name (store.lexical, os.path), a call (run(), load(path)), a path
# (src/main.rs, ./x), or a name in backticks.
_SNAKE = r"\b_*[A-Za-z][A-Za-z0-9]*_[A-Za-z0-9_]*\b|\b_[A-Za-z][A-Za-z0-9]+\b"
_CAMEL = r"\b[a-z]+[A-Z][A-Za-z0-9]*\b|\b[A-Z][a-z0-9]+[A-Z][A-Za-z0-9]*\b|\b[A-Z]{2,}[a-z][A-Za-z0-9]*\b"
_DOTTED = r"\b[A-Za-z_][A-Za-z0-9_]+(?:\.[A-Za-z_][A-Za-z0-9_]*)+\b"
_CALL = r"\b[A-Za-z_][A-Za-z0-9_.]*\((?=[^()]{0,40}\))"
_PATH = r"(?:\.{0,2}/)?(?:[A-Za-z0-9_.-]+/)+[A-Za-z0-9_.-]+"
_TICKED = r"`[^`\s]+`"
_CODE = re.compile("|".join(f"(?:{p})" for p in (_TICKED, _PATH, _CALL, _DOTTED, _SNAKE, _CAMEL)))
# A dotted "name" that is prose: abbreviations and version-like words.
_PROSE_DOTTED = frozenset({"e.g", "i.e", "etc", "vs", "a.k.a", "cf"})


def code_names(query: str) -> list[str]:
    """The names in `query` written as code, as written (backticks, a call's parentheses and a leading ./
    dropped), in order, each once."""
    found: list[str] = []
    for match in _CODE.finditer(query):
        name = match.group().strip("`").rstrip("(").removeprefix("./").strip(".")
        if len(name) > 1 and name.lower() not in _PROSE_DOTTED and name not in found:
            found.append(name)
    return found


def is_code_query(query: str) -> bool:
    """Whether `query` names code (an identifier, dotted name, call, path or file name), not only prose."""
    return bool(code_names(query))


@dataclass(frozen=True)
class Hit:
    path: str
    start_line: int
    end_line: int
    symbol: str
    kind: str
    signature: str
    text: str
    score: float
    chunk_id: int


def names_chunk(names: Sequence[str], path: str, symbol: str) -> bool:
    """Whether a chunk (by its path and qualified symbol) is what one of `names` names: its symbol, the
    symbol's last part, or its file (`agent.py`, `features/agent.py`, the path itself)."""
    last = symbol.rsplit(".", 1)[-1]
    for name in names:
        if symbol and (name == symbol or name == last or symbol.endswith("." + name) or name.endswith("." + symbol)):
            return True
        if "/" in name or "." in name:
            if path == name or path.endswith("/" + name):
                return True
    return False


