"""Code search: the chunks of a project that answer a question, BM25 over identifier words fused with vectors.

Invariant: reads only (the store, the vectors, the embedder the caller gives). The lexical ranking is the
store's FTS5 BM25 over the query's `words` (identifiers split as the index splits them); the dense ranking
is the chunks' vectors by cosine to the query's; the two are fused by reciprocal rank fusion, the dense one
at `DENSE_WEIGHT`, so a chunk without a vector still ranks by its words and a search with no vectors or
no embedder is lexical alone (as when the embedder or the vectors fail: `dense_failure` says why). A query
that names code (`is_code_query`: an identifier with `_` or camelCase humps, a dotted name, a call, a path,
a file name) adds a third ranking to the fusion: the chunks defining a name it names (or, for `Class.method`
in a class kept whole, the chunk holding it), at `NAMED_SYMBOLS_WEIGHT`. Chunks the caller excludes (already
in its window) are not hits; the hits are the `k` best of the rest, best first.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from ..memory.embedders.base import EmbeddingError
from ..memory.fusion import reciprocal_rank_fusion
from .words import code_names, words

if TYPE_CHECKING:
    import numpy as np

    from ..memory.embedders.base import Embedder
    from .store import CodeStore, Project
    from .vectors import CodeVectors

DENSE_WEIGHT = 0.5  # the dense ranking's weight in the fusion, against the lexical one's 1
NAMED_SYMBOLS_WEIGHT = 1.0  # the chunks defining a name the query names, as one more ranking (0: not looked up)
LEXICAL_LIMIT = 100  # chunks each ranking brings to the fusion
DENSE_LIMIT = 100
NAMED_LIMIT = 20

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


def names_symbol(names: Sequence[str], symbol: str) -> bool:
    """Whether one of `names` names this qualified symbol: itself, its last part (`lexical` for
    `CodeStore.lexical`), its qualified tail, or a dotted name ending with it (`store.CodeStore.lexical`)."""
    if not symbol:
        return False
    last = symbol.rsplit(".", 1)[-1]
    return any(name == symbol or name == last or symbol.endswith("." + name) or name.endswith("." + symbol)
               for name in names)


def holds_symbol(names: Sequence[str], symbol: str) -> bool:
    """Whether this symbol's chunk holds what a dotted name names (`Store.save` in a `Store` chunk)."""
    return bool(symbol) and any(name.startswith(symbol + ".") or f".{symbol}." in name for name in names)


def names_file(names: Sequence[str], path: str) -> bool:
    """Whether one of `names` names this file or a folder it is in: its path or a tail of it (`agent.py`,
    `context/agent.py`), a folder (`zeph_cli/agent`), or its module's dotted name (`zeph_cli.agent`)."""
    stem = path.rsplit(".", 1)[0] if "." in path.rsplit("/", 1)[-1] else path
    for name in names:
        if "/" not in name and "." not in name:
            continue
        for form in {name, name.replace(".", "/")} if "/" not in name else {name}:
            form = form.strip("/")
            if form and (path == form or path.endswith("/" + form) or stem == form or stem.endswith("/" + form)
                         or path.startswith(form + "/") or f"/{form}/" in path):
                return True
    return False


class CodeSearch:
    """Searches one store's projects; `vectors` and `embedder` None (or failing): lexical alone."""

    def __init__(self, store: CodeStore, vectors: CodeVectors | None, embedder: Embedder | None) -> None:
        self.store, self.vectors, self.embedder = store, vectors, embedder
        self.dense_failure: str | None = None  # why the last search went without vectors, when it did
        self._symbol_index: dict[int, tuple[int, dict[str, list[tuple[int, str]]]]] = {}  # project id -> version, …

    def search(self, project: Project, query: str, k: int = 8, *,
               exclude: Callable[[str, int, int], bool] | None = None,
               query_vector: np.ndarray | None = None) -> list[Hit]:
        """The `k` chunks that best answer `query`, best first (none excluded by `exclude(path, start, end)`);
        `query_vector`, when given, is the query's vector of the embedder's model (not embedded again)."""
        if k <= 0 or not query.strip():
            return []
        names = code_names(query)
        lexical = [chunk_id for chunk_id, _ in self.store.lexical(project, words(query), LEXICAL_LIMIT)]
        rankings: list[tuple[Sequence[int], float]] = [(lexical, 1.0)]
        dense = self._dense(project, query, query_vector)
        if dense:
            rankings.append((dense, DENSE_WEIGHT))
        fused = reciprocal_rank_fusion(rankings)
        if names and NAMED_SYMBOLS_WEIGHT > 0:
            named = self.named_symbols(project, names)
            if named:
                named.sort(key=lambda i: -fused.get(i, 0.0))
                fused = reciprocal_rank_fusion([*rankings, (named, NAMED_SYMBOLS_WEIGHT)])
        order = sorted(fused, key=lambda i: -fused[i])
        return self._hits(order, fused, k, exclude)

    def _dense(self, project: Project, query: str, query_vector: np.ndarray | None) -> list[int]:
        """The chunks by cosine to the query, best first; [] without vectors or an embedder, or when they fail."""
        self.dense_failure = None
        if self.vectors is None or self.embedder is None:
            return []
        from ..memory.vectors.base import VectorIndexDown

        try:
            vector = query_vector if query_vector is not None else self.embedder.embed([query])[0]
            return [chunk_id for chunk_id, _ in self.vectors.search(project, self.embedder.model, vector,
                                                                      DENSE_LIMIT)]
        except (EmbeddingError, VectorIndexDown, ValueError) as exc:
            self.dense_failure = str(exc)
            return []

    def named_symbols(self, project: Project, names: Sequence[str]) -> list[int]:
        """The chunks of the definitions `names` name (`names_symbol`), at most `NAMED_LIMIT`; if none, the
        chunks that hold them (`holds_symbol`: a class kept whole holds its methods)."""
        by_last = self._symbols(project)
        candidates = [pair for part in dict.fromkeys(p for name in names for p in name.split("."))
                      for pair in by_last.get(part, ())]
        named = [chunk_id for chunk_id, symbol in candidates if names_symbol(names, symbol)]
        if not named:
            named = [chunk_id for chunk_id, symbol in candidates if holds_symbol(names, symbol)]
        return sorted(dict.fromkeys(named))[:NAMED_LIMIT]

    def _symbols(self, project: Project) -> dict[str, list[tuple[int, str]]]:
        """The project's (chunk id, symbol) pairs by the symbol's last part, read again when its chunks change."""
        version = self.store.version(project)
        cached = self._symbol_index.get(project.id)
        if cached is not None and cached[0] == version:
            return cached[1]
        by_last: dict[str, list[tuple[int, str]]] = {}
        for chunk_id, symbol in self.store.db.execute(
            "select c.id, c.symbol from code_chunks c join code_files f on f.id = c.file_id"
            " where f.project_id = ? and c.symbol != '' order by c.id",
            (project.id,),
        ):
            by_last.setdefault(symbol.rsplit(".", 1)[-1], []).append((int(chunk_id), symbol))
        self._symbol_index[project.id] = (version, by_last)
        return by_last

    def _hits(self, order: list[int], fused: dict[int, float], k: int,
              exclude: Callable[[str, int, int], bool] | None) -> list[Hit]:
        hits: list[Hit] = []
        start, batch = 0, k if exclude is None else 2 * k
        while len(hits) < k and start < len(order):
            ids = order[start:start + batch]
            for chunk in self.store.chunks(ids):
                if exclude is not None and exclude(chunk.path, chunk.start_line, chunk.end_line):
                    continue
                hits.append(Hit(chunk.path, chunk.start_line, chunk.end_line, chunk.symbol, chunk.kind,
                                chunk.signature, chunk.text, fused[chunk.id], chunk.id))
                if len(hits) == k:
                    break
            start, batch = start + len(ids), batch * 2
        return hits
