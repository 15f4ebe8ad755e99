"""The code index's store on a real SQLite file: a file's rows replaced together, BM25 over identifier words,
the version readers key their caches by, what is still to embed."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from zeph_cli.features.code_index.chunks import chunk_file
from zeph_cli.features.code_index.store import CodeStore, StoredTag
from zeph_cli.features.code_index.tags import tags_of
from zeph_cli.store import open_database

PARSER_PY = '''import re


def parse_header(line):
    """Split an HTTP header line."""
    name, _, value = line.partition(":")
    return name.strip(), value.strip()


class RequestParser:
    def feed(self, data):
        return parse_header(data)
'''

CACHE_PY = '''def lru_cache_get(cache, key):
    return cache.get(key)
'''


def _store(tmp_path: Path) -> CodeStore:
    return CodeStore(open_database(tmp_path / "zeph.db"))


def _put(store: CodeStore, project, path: str, text: str, sha: str = "s1") -> int:
    chunks, imports = chunk_file(path, text)
    lines = text.split("\n")
    tags = [StoredTag(t.path, t.name, t.role, t.kind, t.line, lines[t.line - 1].strip() if t.role == "def" else "")
            for t in tags_of(path, text)]
    return store.replace_file(project, path, language="python", sha=sha, size=len(text), mtime_ns=1,
                              imports=imports, chunks=chunks, tags=tags)


def test_project_is_by_resolved_root_and_created_once(tmp_path: Path) -> None:
    store = _store(tmp_path)
    assert store.project(tmp_path / "repo", create=False) is None
    first = store.project(tmp_path / "repo")
    again = store.project(tmp_path / "x" / ".." / "repo")
    assert first is not None and again == first and first.root == str((tmp_path / "repo").resolve())
    assert first.indexed_at is None
    store.mark_indexed(first)
    assert store.project(tmp_path / "repo").indexed_at is not None  # type: ignore[union-attr]


def test_replace_file_stores_chunks_words_and_tags_and_replacing_drops_the_old(tmp_path: Path) -> None:
    store = _store(tmp_path)
    project = store.project(tmp_path)
    assert project is not None
    _put(store, project, "net/parser.py", PARSER_PY)
    _put(store, project, "cache.py", CACHE_PY)
    status = store.status(project)
    assert status.files == 2 and status.chunks >= 3 and status.languages == {"python": 2}
    hits = store.lexical(project, ["header"], 10)
    found = store.chunks([chunk_id for chunk_id, _ in hits])
    assert {c.symbol for c in found} >= {"parse_header"} and all(c.path == "net/parser.py" for c in found)
    assert all(score > 0 for _, score in hits)  # negated bm25: higher is better
    # identifier parts are words: "request" finds RequestParser
    assert any(c.symbol.startswith("RequestParser") for c in store.chunks([i for i, _ in store.lexical(project, ["request"], 10)]))
    defs = {t.name: t for t in store.tags(project) if t.role == "def"}
    assert defs["parse_header"].code == "def parse_header(line):"
    assert defs["parse_header"].path == "net/parser.py" and defs["parse_header"].line == 4

    version = store.version(project)
    _put(store, project, "net/parser.py", "def tokenize(text):\n    return text.split()\n", sha="s2")
    assert store.version(project) > version
    assert store.lexical(project, ["header"], 10) == []  # the old chunks' words are gone
    assert store.files(project)["net/parser.py"].sha == "s2"
    assert "parse_header" not in {t.name for t in store.tags(project)}
    remaining = store.db.execute("select count(*) from code_chunk_words").fetchone()[0]
    assert remaining == store.status(project).chunks


def test_lexical_ranks_better_first_quotes_words_and_stays_in_its_project(tmp_path: Path) -> None:
    store = _store(tmp_path)
    one, other = store.project(tmp_path / "one"), store.project(tmp_path / "other")
    assert one is not None and other is not None
    _put(store, one, "a.py", "def cache_get(cache):\n    return cache.cache\n")
    _put(store, one, "b.py", "def fetch(url):\n    cache = None\n    return url\n")
    _put(store, other, "c.py", "def cache_all(cache):\n    return cache\n")
    ranked = store.lexical(one, ["cache", "or", "near", '"'], 10)  # FTS5 operators read as words, no error
    paths = [c.path for c in store.chunks([i for i, _ in ranked])]
    assert paths == ["a.py", "b.py"]
    assert ranked[0][1] > ranked[1][1]
    assert store.lexical(one, [], 10) == []


def test_chunks_keep_the_order_of_ids_and_skip_the_unknown(tmp_path: Path) -> None:
    store = _store(tmp_path)
    project = store.project(tmp_path)
    assert project is not None
    _put(store, project, "p.py", PARSER_PY)
    ids = [i for i, _ in store.missing_vectors(project, "m", 100)]
    assert len(ids) >= 2
    backwards = list(reversed(ids)) + [999_999]
    assert [c.id for c in store.chunks(backwards)] == list(reversed(ids))
    by_path = store.chunks_of_paths(project, ["p.py"])
    assert [c.start_line for c in by_path] == sorted(c.start_line for c in by_path)


def test_touch_and_forget_and_clear(tmp_path: Path) -> None:
    store = _store(tmp_path)
    project = store.project(tmp_path)
    assert project is not None
    _put(store, project, "p.py", PARSER_PY)
    _put(store, project, "c.py", CACHE_PY)
    version = store.version(project)
    store.touch_file(project, "p.py", size=5, mtime_ns=77)
    assert store.files(project)["p.py"].mtime_ns == 77 and store.version(project) == version  # chunks unchanged
    assert store.forget_files(project, ["c.py", "never.py"]) == 1
    assert store.version(project) > version and set(store.files(project)) == {"p.py"}
    assert store.forget_files(project, []) == 0
    store.mark_indexed(project)
    store.clear(project)
    status = store.status(project)
    assert (status.files, status.chunks, status.tags, status.indexed_at) == (0, 0, 0, None)
    assert store.db.execute("select count(*) from code_chunk_words").fetchone()[0] == 0


def test_missing_vectors_gives_embedding_text_and_vectors_go_with_their_chunks(tmp_path: Path) -> None:
    store = _store(tmp_path)
    project = store.project(tmp_path)
    assert project is not None
    _put(store, project, "p.py", PARSER_PY)
    missing = store.missing_vectors(project, "mini", 100)
    first_id, text = missing[0]
    assert text.startswith("# p.py") and "import re" in text
    vector = np.ones(4, dtype=np.float32).tobytes()
    store.db.execute("insert into code_vectors (chunk_id, model, dim, vector) values (?, 'mini', 4, ?)",
                     (first_id, vector))
    assert first_id not in {i for i, _ in store.missing_vectors(project, "mini", 100)}
    assert len(store.missing_vectors(project, "other", 100)) == len(missing)  # models never mix
    assert store.status(project).embedded == {"mini": 1}
    _put(store, project, "p.py", CACHE_PY, sha="s2")
    assert store.status(project).embedded == {}  # replaced chunks lose their vectors
