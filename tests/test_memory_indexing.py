"""index_pending on a real database with the embedded embedder: every pending message gets a vector,
and finding them costs a scan per page of pending messages, not one per batch embedded."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from tests.vector_helpers import add_conversation, open_store, text_message
from zeph_cli.config import Config
from zeph_cli.features.memory import indexer as indexer_module
from zeph_cli.features.memory.embedders.embedded import shared_embedded
from zeph_cli.features.memory.service import MemoryService
from zeph_cli.features.memory.vectors.sqlite_index import SqliteVectorIndex


class CountingIndex(SqliteVectorIndex):
    """The real sqlite index, counting the scans for pending messages."""

    scans = 0

    def missing(self, model, limit, roles=None, since_id=0):
        CountingIndex.scans += 1
        return super().missing(model, limit, roles, since_id)


@pytest.fixture
def db_path(tmp_path: Path) -> Path:
    return tmp_path / "data" / "zeph.db"


def service(store) -> MemoryService:
    config = Config()
    memory = MemoryService(config, store.db, project_root=Path("/tmp"), make_embedder=shared_embedded,
                           make_index=lambda db, path: CountingIndex(db, path))
    memory.start_warming()
    return memory


def test_pending_messages_are_found_a_page_at_a_time(db_path, monkeypatch):
    monkeypatch.setattr(indexer_module, "PENDING_PAGE", 300)
    monkeypatch.setattr(indexer_module, "INDEX_BATCH", 128)
    CountingIndex.scans = 0
    store = open_store(db_path)
    _, ids = add_conversation(store, 700, text="the staging database listens on port")
    progress: list[tuple[int, int]] = []

    assert service(store).index_pending(lambda done, total: progress.append((done, total))) == 700
    # pages of 300, 300 and a short 100 that ends the pass (batch by batch, it would be 7 scans)
    assert CountingIndex.scans == 3
    # embedded in batches of at most 128 within each page
    assert progress == [(done, 700) for done in (128, 256, 300, 428, 556, 600, 700)]
    index = SqliteVectorIndex(store.db, db_path)
    model = shared_embedded().model
    assert index.missing_count(model) == 0
    # each message got its own text's vector, across pages and batches
    texts = [f"the staging database listens on port {i}" for i in range(700)]
    stored = dict(store.db.execute("select message_id, vector from message_vectors where model = ?", [model]).fetchall())
    assert np.allclose(np.stack([np.frombuffer(stored[i], dtype=np.float32) for i in ids]),
                       shared_embedded().embed(texts), atol=1e-6)
    # and the last one is found by its text: no other number below 700 has the digits 6, 9, 9 (the embedder
    # averages token vectors, so "port 12" and "port 21" would be one vector, and their order a tie)
    found = index.search(model, shared_embedded().embed([texts[699]])[0], 2)
    assert found[0][0] == ids[699] and found[0][1] > found[1][1] + 1e-3


def test_a_pass_with_nothing_new_scans_once_and_a_new_message_is_found(db_path):
    CountingIndex.scans = 0
    store = open_store(db_path)
    conversation, _ = add_conversation(store, 5)
    assert service(store).index_pending() == 5
    CountingIndex.scans = 0
    assert service(store).index_pending() == 0
    assert CountingIndex.scans == 1
    added = store.add_message(conversation, text_message("a reply worth recalling", role="assistant")).id
    assert service(store).index_pending() == 1
    assert SqliteVectorIndex(store.db, db_path).missing(shared_embedded().model, 10) == []
    assert added in {i for i, _ in SqliteVectorIndex(store.db, db_path).search(
        shared_embedded().model, shared_embedded().embed(["a reply worth recalling"])[0], 1)}


def test_a_turn_indexes_only_its_own_messages(db_path):
    store = open_store(db_path)
    conversation, ids = add_conversation(store, 6)
    assert service(store).index_pending(since_id=ids[4]) == 2  # the backlog is left to zeph memory reindex
    missing = {p.message_id for p in SqliteVectorIndex(store.db, db_path).missing(shared_embedded().model, 10)}
    assert missing == set(ids[:4])
    assert service(store).index_pending(should_stop=lambda: True) == 0  # asked to stop: no batch starts
