"""Code search over a real SQLite store of real chunks (the code samples of every language and the code index's
own modules, chunked by tree-sitter), with wordllama's real vectors: BM25 over identifier words fused with
the dense ranking, lexical alone without vectors, an embedder or when it fails; chunks without a vector still
found by their words; a query that names code puts the definition it names first; excluded chunks left out.
The query router is tested on queries written as people write them."""

from __future__ import annotations

from pathlib import Path

import pytest

from zeph_cli.features.code_index.chunks import chunk_file
from zeph_cli.features.code_index.search import CodeSearch, code_names, is_code_query
from zeph_cli.features.code_index.store import CodeStore, Project
from zeph_cli.features.code_index.vectors import SqliteCodeVectors
from zeph_cli.features.memory.embedders.embedded import shared_embedded
from zeph_cli.features.memory.embedders.minilm import MiniLMEmbedder
from zeph_cli.store import open_database

REPO = Path(__file__).resolve().parent.parent
SAMPLES = Path(__file__).parent / "data" / "code_samples"
MODULES = ["chunks.py", "languages.py", "tags.py", "words.py", "migrations.py"]


def fill(store: CodeStore, project: Project) -> None:
    files = {f"samples/{p.name}": p.read_text() for p in sorted(SAMPLES.iterdir())}
    files |= {f"code_index/{name}": (REPO / "zeph_cli/features/code_index" / name).read_text() for name in MODULES}
    for path, text in files.items():
        chunks, imports = chunk_file(path, text)
        store.replace_file(project, path, language="", sha=path, size=len(text), mtime_ns=0, imports=imports,
                           chunks=chunks, tags=[])


@pytest.fixture
def indexed(tmp_path):
    db = open_database(tmp_path / "zeph.db")
    store = CodeStore(db)
    project = store.project(tmp_path)
    assert project is not None
    fill(store, project)
    yield store, project
    db.close()


def embed_all(store: CodeStore, project: Project, vectors: SqliteCodeVectors, embedder, *, every: int = 1,
              leave_out: str = "") -> int:
    todo = store.missing_vectors(project, embedder.model, 10_000)[::every]
    todo = [(i, text) for i, text in todo if not leave_out or leave_out not in text]
    vectors.add(embedder.model, [i for i, _ in todo], embedder.embed([t for _, t in todo]))
    return len(todo)


def test_lexical_alone_without_vectors_finds_the_function_by_its_words(indexed):
    store, project = indexed
    search = CodeSearch(store, None, None)
    hits = search.search(project, "split an identifier into its parts, lower-cased", k=5)
    assert [h.path for h in hits[:2]] == ["code_index/words.py"] * 2 and hits[1].symbol == "words"
    assert [h.score for h in hits] == sorted((h.score for h in hits), reverse=True)
    source = (REPO / "zeph_cli/features/code_index/words.py").read_text().split("\n")
    assert hits[1].text == "\n".join(source[hits[1].start_line - 1:hits[1].end_line])
    assert hits[1].signature == "def words(text: str) -> list[str]:" and hits[1].kind == "function"
    assert search.search(project, "   ") == [] and search.search(project, "words", k=0) == []


def test_hybrid_with_wordllama_and_chunks_without_vectors_still_found_by_words(indexed):
    store, project = indexed
    embedder = shared_embedded()
    vectors = SqliteCodeVectors(store.db)
    assert embed_all(store, project, vectors, embedder, every=2, leave_out="def _imports(") > 10  # half of them
    with_vectors = {i for i, _ in vectors.search(project, embedder.model, embedder.embed(["x"])[0], 10_000)}
    search = CodeSearch(store, vectors, embedder)
    unembedded = [c for c in store.chunks([i for i, _ in store.lexical(project, ["imports"], 100)])
                  if c.id not in with_vectors and c.symbol == "_imports"]
    assert unembedded, "the test needs _imports without a vector"
    hits = search.search(project, "the file's top-level imports", k=10)
    assert "_imports" in [h.symbol for h in hits]  # BM25's first, its dense rank missing: lower, still there
    assert search.dense_failure is None
    dense_only = search.search(project, "zzzz unrelated qqqq", k=5)  # no word matches: the vectors still rank
    assert dense_only and all(h.chunk_id in with_vectors for h in dense_only)


def test_a_given_query_vector_is_used_instead_of_embedding_the_query(indexed):
    store, project = indexed
    embedder = shared_embedded()
    vectors = SqliteCodeVectors(store.db)
    embed_all(store, project, vectors, embedder)
    search = CodeSearch(store, vectors, embedder)
    query = "qqqq zzzz"  # no word of the store: the ranking is the vector's
    own = search.search(project, query, k=5)
    same = search.search(project, query, k=5, query_vector=embedder.embed([query])[0])
    other = search.search(project, query, k=5, query_vector=embedder.embed(["a Ruby greeting class"])[0])
    assert [h.chunk_id for h in own] == [h.chunk_id for h in same]
    assert other[0].path == "samples/sample.rb" and [h.chunk_id for h in other] != [h.chunk_id for h in own]


def test_a_failing_embedder_leaves_the_lexical_ranking(indexed, tmp_path):
    store, project = indexed
    vectors = SqliteCodeVectors(store.db)
    search = CodeSearch(store, vectors, MiniLMEmbedder(tmp_path / "missing.onnx"))
    hits = search.search(project, "split an identifier into its parts, lower-cased", k=3)
    assert hits[1].symbol == "words"
    assert search.dense_failure is not None and "missing.onnx" in search.dense_failure
    assert [h.chunk_id for h in hits] == [h.chunk_id for h in CodeSearch(store, None, None).search(
        project, "split an identifier into its parts, lower-cased", k=3)]


def test_excluded_chunks_are_not_hits_and_k_is_still_filled(indexed):
    store, project = indexed
    search = CodeSearch(store, None, None)
    query = "language grammar load tags query"
    before = search.search(project, query, k=6)
    assert "code_index/languages.py" in [h.path for h in before]

    def in_window(path: str, start: int, end: int) -> bool:
        return path == "code_index/languages.py"

    after = search.search(project, query, k=6, exclude=in_window)
    assert len(after) == 6 and all(h.path != "code_index/languages.py" for h in after)
    kept = [h.chunk_id for h in before if h.path != "code_index/languages.py"]
    assert [h.chunk_id for h in after][:len(kept)] == kept


def test_a_query_naming_a_definition_finds_it_first(indexed):
    store, project = indexed
    search = CodeSearch(store, None, None)
    # `load` is a word of many chunks (loads, load_…); the query names the function as code
    hits = search.search(project, "why does load() return None for a grammar", k=5)
    assert (hits[0].path, hits[0].symbol) == ("code_index/languages.py", "load")
    # `_Chunker` fits one chunk: the chunk that holds `_Chunker.between` comes first, not chunk_file (which
    # BM25 alone ranks first: it uses the chunker and speaks of nested definitions)
    hits = search.search(project, "what does _Chunker.between do with the nested definitions", k=3)
    assert hits[0].symbol == "_Chunker" and "def between(" in hits[0].text


def test_a_definition_is_searched_as_written_in_other_languages(indexed):
    store, project = indexed
    hits = CodeSearch(store, None, None).search(project, "where is the Greeter class defined", k=10)
    assert any(h.path.startswith("samples/") for h in hits)


@pytest.mark.parametrize(("query", "names"), [
    ("One build_agent() for zeph ask", ["build_agent"]),
    ("The turn's steps take a TurnState, never the Agent", ["TurnState"]),
    ("user_text.read_user_text reads the files", ["user_text.read_user_text"]),
    ("what does `load` do", ["load"]),
    ("fix the bug in src/main.rs", ["src/main.rs"]),
    ("the store's query() only reads", ["query"]),
    ("where is HTTPServer started", ["HTTPServer"]),
    ("getUserName returns null", ["getUserName"]),
    ("rename MAX_LINES", ["MAX_LINES"]),
    ("zeph.log next to the database", ["zeph.log"]),
])
def test_code_looking_queries_and_the_names_they_name(query, names):
    assert is_code_query(query)
    assert code_names(query) == names


@pytest.mark.parametrize("query", [
    "how does the agent compact its context",
    "Leave a binary project file out with a warning",
    "Shorter memory tool descriptions, e.g. for small models",
    "Anthropic",
    "version 1.2 of the protocol",
    "",
])
def test_prose_queries_are_not_routed(query):
    assert not is_code_query(query)


def test_minilm_finds_by_meaning_what_shares_no_word_with_the_query(indexed):
    store, project = indexed
    embedder = MiniLMEmbedder()
    vectors = SqliteCodeVectors(store.db)
    embed_all(store, project, vectors, embedder)
    query = "a greeting in Ruby"  # the Ruby sample's Greeter says "Hello": no word in common
    lexical = CodeSearch(store, None, None).search(project, query, k=3)
    hybrid = CodeSearch(store, vectors, embedder).search(project, query, k=3)
    assert "samples/sample.rb" not in [h.path for h in lexical]
    assert ("samples/sample.rb", "Greeter") in [(h.path, h.symbol) for h in hybrid]
