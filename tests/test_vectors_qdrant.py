"""The qdrant vector index against qdrant-client's local mode (the same API, in process), and a down server."""

from __future__ import annotations

import socket
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from tests.vector_helpers import add_conversation, brute_force, open_store, rows_for, unit_vectors
from zeph_cli.config import Config
from zeph_cli.features.memory.vectors import VectorIndexDown, open_index
from zeph_cli.features.memory.vectors.qdrant_index import QdrantVectorIndex, collection_name

qdrant_client = pytest.importorskip("qdrant_client")

HANG = 30  # seconds before a search that never returns counts as hung


@pytest.fixture
def store(tmp_path: Path):
    return open_store(tmp_path / "zeph.db")


@pytest.fixture
def client():
    local = qdrant_client.QdrantClient(location=":memory:")
    yield local
    local.close()


def closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]  # closed again when this returns: nothing listens there


def test_search_finds_nearest_best_first_and_records_the_messages(store, client):
    conversation, ids = add_conversation(store, 60)
    vectors = unit_vectors(60, 16, seed=1)
    index = QdrantVectorIndex(store.db, "http://unused", client=client)
    index.add("model-a", rows_for(conversation, ids, vectors))
    query = unit_vectors(1, 16, seed=2)[0]
    found = index.search("model-a", query, 5)
    assert [i for i, _ in found] == brute_force(ids, vectors, query, 5)
    assert found[0][1] == pytest.approx(float(vectors[ids.index(found[0][0])] @ query), abs=1e-4)
    rows = store.db.execute("select count(*), count(vector) from message_vectors where model = 'model-a'").fetchone()
    assert rows == (60, 0)  # recorded as indexed, the vector itself in qdrant
    point = client.retrieve(collection_name("model-a"), [ids[0]], with_payload=True)[0]
    assert point.payload == {"conversation_id": conversation}


def test_models_get_their_own_collections_and_never_mix(store, client):
    conversation, ids = add_conversation(store, 20)
    a, b = unit_vectors(20, 8, seed=3), unit_vectors(20, 12, seed=4)
    index = QdrantVectorIndex(store.db, "http://unused", client=client)
    index.add("org/model:a", rows_for(conversation, ids[:10], a[:10]))
    index.add("org/model:b", rows_for(conversation, ids[10:], b[10:]))
    assert {i for i, _ in index.search("org/model:b", b[15], 50)} == set(ids[10:])
    assert {i for i, _ in index.search("org/model:a", a[2], 50)} == set(ids[:10])
    assert index.search("never-indexed", a[2], 5) == []
    names = {c.name for c in client.get_collections().collections}
    assert names == {collection_name("org/model:a"), collection_name("org/model:b")}
    assert collection_name("org/model:a") != collection_name("org_model_a")


def test_deleted_messages_are_not_returned_and_their_points_go(store, client):
    first, first_ids = add_conversation(store, 10)
    second, second_ids = add_conversation(store, 10)
    vectors = unit_vectors(20, 8, seed=5)
    index = QdrantVectorIndex(store.db, "http://unused", client=client)
    index.add("m", rows_for(first, first_ids, vectors[:10]) + rows_for(second, second_ids, vectors[10:]))
    store.delete_conversation(first)
    found = index.search("m", vectors[0], 5)
    assert len(found) == 5 and {i for i, _ in found} <= set(second_ids)
    assert client.count(collection_name("m")).count < 20  # what surfaced was dropped


def test_forget_model_drops_the_collection_and_the_records(store, client):
    conversation, ids = add_conversation(store, 6)
    index = QdrantVectorIndex(store.db, "http://unused", client=client)
    index.add("m", rows_for(conversation, ids, unit_vectors(6, 8, seed=6)))
    assert index.missing_count("m") == 0
    assert index.forget_model("m") == 6
    assert not client.collection_exists(collection_name("m"))
    assert index.search("m", unit_vectors(1, 8, seed=6)[0], 3) == []
    assert [p.message_id for p in index.missing("m", 10)] == ids


def test_missing_treats_sqlite_backend_vectors_as_not_in_qdrant(store, client, tmp_path):
    from zeph_cli.features.memory.vectors.sqlite_index import SqliteVectorIndex

    conversation, ids = add_conversation(store, 4)
    SqliteVectorIndex(store.db, None).add("m", rows_for(conversation, ids[:2], unit_vectors(2, 8, seed=7)))
    index = QdrantVectorIndex(store.db, "http://unused", client=client)
    assert [p.message_id for p in index.missing("m", 10)] == ids
    index.add("m", rows_for(conversation, ids[:3], unit_vectors(3, 8, seed=8)))
    assert [p.message_id for p in index.missing("m", 10)] == ids[3:]


def test_a_local_path_collection_survives_reopening(store, tmp_path):
    conversation, ids = add_conversation(store, 5)
    vectors = unit_vectors(5, 8, seed=9)
    first = qdrant_client.QdrantClient(path=str(tmp_path / "qdrant"))
    QdrantVectorIndex(store.db, "http://unused", client=first).add("m", rows_for(conversation, ids, vectors))
    first.close()
    second = qdrant_client.QdrantClient(path=str(tmp_path / "qdrant"))
    try:
        found = QdrantVectorIndex(store.db, "http://unused", client=second).search("m", vectors[4], 1)
    finally:
        second.close()
    assert found[0][0] == ids[4]


def test_a_down_server_fails_with_one_line(store):  # how long it takes: benchmarks/timeouts.py
    conversation, ids = add_conversation(store, 2)
    url = f"http://127.0.0.1:{closed_port()}"
    config = Config()
    config.memory.vector_backend = "qdrant"
    config.memory.qdrant_url = url
    index = open_index(config, store.db, None)
    assert isinstance(index, QdrantVectorIndex)
    for call in (
        lambda: index.search("m", unit_vectors(1, 8, seed=1)[0], 3),
        lambda: index.add("m", rows_for(conversation, ids, unit_vectors(2, 8, seed=1))),
        lambda: index.forget_model("m"),
    ):
        with pytest.raises(VectorIndexDown) as caught:
            call()
        message = str(caught.value)
        assert message.startswith(f"qdrant at {url} is not reachable: ")
        assert "refused" in message.lower() and "\n" not in message
        assert caught.value.__cause__ is None and caught.value.__suppress_context__
    assert store.db.execute("select count(*) from message_vectors").fetchone()[0] == 0


def test_a_server_that_never_answers_is_given_up_on_with_one_line(store):
    """The client's own timeout ends the wait (how soon: benchmarks/timeouts.py); the bound here only
    ends a would-be hang."""
    raised: list[BaseException] = []

    def search() -> None:
        try:
            index.search("m", unit_vectors(1, 8, seed=1)[0], 3)
        except BaseException as exc:  # noqa: BLE001 - handed to the test
            raised.append(exc)

    with socket.socket() as listener:  # accepts connections (the kernel does), never replies
        listener.bind(("127.0.0.1", 0))
        listener.listen(8)
        url = f"http://127.0.0.1:{listener.getsockname()[1]}"
        index = QdrantVectorIndex(store.db, url)
        worker = threading.Thread(target=search, daemon=True)
        worker.start()
        worker.join(HANG)
        assert not worker.is_alive(), f"the search still waited for a silent server after {HANG} s"
    [error] = raised
    assert isinstance(error, VectorIndexDown)
    assert str(error).startswith(f"qdrant at {url} is not reachable: ") and "\n" not in str(error)


def test_the_sqlite_backend_does_not_import_qdrant_client(tmp_path):
    code = (
        "import sys\n"
        "from pathlib import Path\n"
        "from zeph_cli.config import Config\n"
        "from zeph_cli.store import open_database\n"
        "from zeph_cli.features.memory.vectors import open_index\n"
        f"p = Path({str(tmp_path / 'z.db')!r})\n"
        "index = open_index(Config(), open_database(p), p)\n"
        "import numpy\n"
        "index.search('m', numpy.ones(4, dtype='float32'), 3)\n"
        "print('qdrant_client' in sys.modules)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "False"
