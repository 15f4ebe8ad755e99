"""Chunk vectors in both backends (SQLite BLOBs with an in-process matrix, qdrant's local mode): a search
is the brute-force cosine ranking of the project's chunks for one model, and only of chunks still stored."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from zeph_cli.features.code_index.chunks import Chunk
from zeph_cli.features.code_index.store import CodeStore
from zeph_cli.features.code_index.vectors import QdrantCodeVectors, SqliteCodeVectors, collection_name
from zeph_cli.store import open_database

DIM = 16


def _fill(store: CodeStore, root: Path, files: int = 5, per_file: int = 4):
    project = store.project(root)
    assert project is not None
    for f in range(files):
        chunks = [Chunk(f"f{f}.py", 10 * c + 1, 10 * c + 5, f"fn{f}_{c}", "function", f"def fn{f}_{c}():",
                        f"def fn{f}_{c}():\n    return {c}\n") for c in range(per_file)]
        store.replace_file(project, f"f{f}.py", language="python", sha=str(f), size=1, mtime_ns=1, imports="",
                           chunks=chunks, tags=[])
    ids = [i for i, _ in store.missing_vectors(project, "m", 1000)]
    return project, ids


def _unit(rows: int, seed: int) -> np.ndarray:
    m = np.random.default_rng(seed).normal(size=(rows, DIM)).astype(np.float32)
    return m / np.linalg.norm(m, axis=1, keepdims=True)


def _brute(ids: list[int], matrix: np.ndarray, query: np.ndarray, k: int) -> list[int]:
    scores = matrix @ (query / np.linalg.norm(query))
    return [ids[i] for i in np.argsort(-scores, kind="stable")[:k]]


@pytest.fixture
def store(tmp_path: Path) -> CodeStore:
    return CodeStore(open_database(tmp_path / "zeph.db"))


@pytest.fixture(params=["sqlite", "qdrant"])
def vectors(request, store: CodeStore):
    if request.param == "sqlite":
        yield SqliteCodeVectors(store.db)
        return
    qdrant_client = pytest.importorskip("qdrant_client")
    client = qdrant_client.QdrantClient(location=":memory:")
    yield QdrantCodeVectors(store.db, "local", client=client)
    client.close()


def test_search_is_the_cosine_ranking_of_the_projects_chunks_for_the_model(store, vectors, tmp_path) -> None:
    project, ids = _fill(store, tmp_path / "one")
    other, other_ids = _fill(store, tmp_path / "two", files=2)
    matrix = _unit(len(ids), 1)
    vectors.add("m", ids, matrix)
    vectors.add("m", other_ids, _unit(len(other_ids), 2))
    vectors.add("n", ids[:3], _unit(3, 3))
    query = _unit(1, 4)[0]
    found = vectors.search(project, "m", query, 5)
    assert [i for i, _ in found] == _brute(ids, matrix, query, 5)
    assert all(a[1] >= b[1] for a, b in zip(found, found[1:]))
    assert abs(found[0][1] - float(matrix[ids.index(found[0][0])] @ query)) < 1e-4
    assert {i for i, _ in vectors.search(project, "n", _unit(1, 5)[0], 50)} == set(ids[:3])  # models never mix
    assert set(i for i, _ in vectors.search(other, "m", query, 50)) == set(other_ids)  # nor projects
    assert store.missing_vectors(project, "m", 1000) == []  # the rows say what is embedded (qdrant: null vector)


def test_replaced_and_forgotten_chunks_leave_the_results(store, vectors, tmp_path) -> None:
    project, ids = _fill(store, tmp_path)
    matrix = _unit(len(ids), 1)
    vectors.add("m", ids, matrix)
    query = matrix[0]
    assert vectors.search(project, "m", query, 1)[0][0] == ids[0]
    store.replace_file(project, "f0.py", language="python", sha="new", size=1, mtime_ns=2, imports="",
                       chunks=[], tags=[])  # f0's four chunks (ids[0:4]) are gone
    found = [i for i, _ in vectors.search(project, "m", query, 50)]
    assert set(found) == set(ids[4:])
    vectors.forget("m", ids[4:6])
    assert set(i for i, _ in vectors.search(project, "m", query, 50)) == set(ids[6:])
    assert [i for i, _ in store.missing_vectors(project, "m", 100)] == ids[4:6]
    vectors.clear(project)
    assert vectors.search(project, "m", query, 50) == []
    assert store.status(project).embedded == {}


def test_clearing_the_store_with_its_vectors_drops_them_in_either_backend(store, vectors, tmp_path) -> None:
    project, ids = _fill(store, tmp_path)
    vectors.add("m", ids, _unit(len(ids), 1))
    store.clear(project, vectors)
    assert vectors.search(project, "m", _unit(1, 2)[0], 50) == []
    assert store.status(project).chunks == 0
    if isinstance(vectors, QdrantCodeVectors):
        assert not vectors.client.collection_exists(collection_name(project.root, "m"))


def test_sqlite_matrix_is_read_once_per_version(store, tmp_path) -> None:
    project, ids = _fill(store, tmp_path)
    vectors = SqliteCodeVectors(store.db)
    vectors.add("m", ids[:10], _unit(10, 1))
    first = vectors.matrix(project, "m")
    assert vectors.matrix(project, "m")[1] is first[1]  # warm: the same matrix
    vectors.add("m", ids[10:], _unit(len(ids) - 10, 2))
    ids_now, matrix_now = vectors.matrix(project, "m")
    assert matrix_now is not first[1] and list(ids_now) == ids


def test_qdrant_collection_is_per_root_and_model() -> None:
    names = {collection_name(root, model) for root in ("/a/x", "/b/x") for model in ("m", "n")}
    assert len(names) == 4 and all(name.startswith("zeph_code_x_") for name in names)


def test_vectors_of_chunks_replaced_while_embedding_are_dropped(store, vectors, tmp_path) -> None:
    project, ids = _fill(store, tmp_path, files=2)
    store.replace_file(project, "f0.py", language="python", sha="new", size=1, mtime_ns=2, imports="",
                       chunks=[], tags=[])  # ids[0:4] gone between missing_vectors and add
    vectors.add("m", ids, _unit(len(ids), 1))
    assert {i for i, _ in vectors.search(project, "m", _unit(1, 2)[0], 50)} == set(ids[4:])
    assert store.status(project).embedded == {"m": len(ids) - 4}


def test_the_configuration_picks_the_backend_and_a_down_qdrant_is_one_line(store, tmp_path) -> None:
    import socket

    from zeph_cli.config import Config
    from zeph_cli.features.code_index.vectors import open_code_vectors
    from zeph_cli.features.memory.vectors import VectorIndexDown

    pytest.importorskip("qdrant_client")
    config = Config()
    assert isinstance(open_code_vectors(config, store.db), SqliteCodeVectors)
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    config.memory.vector_backend = "qdrant"
    config.memory.qdrant_url = f"http://127.0.0.1:{port}"
    vectors = open_code_vectors(config, store.db)
    assert isinstance(vectors, QdrantCodeVectors)
    project, ids = _fill(store, tmp_path, files=1)
    with pytest.raises(VectorIndexDown, match="not reachable"):
        vectors.search(project, "m", _unit(1, 1)[0], 3)
    with pytest.raises(VectorIndexDown):
        vectors.add("m", ids, _unit(len(ids), 1))
    assert store.status(project).embedded == {}  # nothing recorded for points never stored
