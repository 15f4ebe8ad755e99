"""The embedded vector index on real SQLite files: search, models, deletions, the matrix cache."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

from tests.vector_helpers import (
    add_conversation,
    brute_force,
    open_store,
    rows_for,
    text_message,
    tool_call_only,
    unit_vectors,
)
from zeph_cli.config import Config
from zeph_cli.features.memory.vectors import VectorRow, open_index
from zeph_cli.features.memory.vectors.matrix_cache import MANIFEST, MatrixCache
from zeph_cli.features.memory.vectors.sqlite_index import SqliteVectorIndex, top_k
from zeph_cli.store import open_database

ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture
def db_path(tmp_path: Path) -> Path:
    return tmp_path / "data" / "zeph.db"


def fresh_index(db_path: Path) -> SqliteVectorIndex:
    """A new connection and a new index over it, as another zeph process would have."""
    return SqliteVectorIndex(open_database(db_path), db_path)


def test_open_index_chooses_sqlite_by_default(db_path):
    index = open_index(Config(), open_database(db_path), db_path)
    assert isinstance(index, SqliteVectorIndex)
    assert index.cache_root == Path(f"{db_path}.vectors")


def test_search_matches_brute_force_best_first(db_path):
    store = open_store(db_path)
    conversation, ids = add_conversation(store, 300)
    vectors = unit_vectors(300, 32, seed=1)
    index = SqliteVectorIndex(store.db, db_path)
    index.add("model-a", rows_for(conversation, ids, vectors))
    for query in unit_vectors(5, 32, seed=2):
        found = index.search("model-a", query, 7)
        assert [i for i, _ in found] == brute_force(ids, vectors, query, 7)
        scores = [s for _, s in found]
        assert scores == sorted(scores, reverse=True)
        assert scores[0] == pytest.approx(float(vectors[ids.index(found[0][0])] @ query), abs=1e-5)


def test_equal_vectors_come_newest_first_wherever_the_limit_cuts(db_path):
    store = open_store(db_path)
    conversation, ids = add_conversation(store, 300)
    distinct = unit_vectors(3, 16, seed=28)
    vectors = distinct[np.arange(300) % 3]  # three vectors, a hundred messages each
    SqliteVectorIndex(store.db, db_path).add("m", rows_for(conversation, ids, vectors))
    groups = sorted(range(3), key=lambda g: -float(distinct[g] @ distinct[1]))
    expected = [i for g in groups for i in sorted(ids[g::3], reverse=True)]
    for limit in (1, 7, 100, 130, 300):
        assert [i for i, _ in fresh_index(db_path).search("m", distinct[1], limit)] == expected[:limit], limit


def test_top_k_takes_scores_a_few_ulps_apart_as_equal():
    ids = np.arange(1, 9, dtype=np.int64)
    one = np.float32(0.5)
    ulp = np.spacing(one)
    # what a matrix product gives for equal vectors at different rows: the same cosine, give or take an ulp
    scores = np.array([one, one + ulp, 0.2, one - ulp, 0.9, one, 0.2, one + 2 * ulp], dtype=np.float32)
    assert [i for i, _ in top_k(ids, scores, 8)] == [5, 8, 6, 4, 2, 1, 7, 3]
    assert [i for i, _ in top_k(ids, scores, 3)] == [5, 8, 6]
    assert [i for i, _ in top_k(ids, scores, 7)] == [5, 8, 6, 4, 2, 1, 7]


def test_a_stored_vector_is_its_own_nearest_with_cosine_one(db_path):
    store = open_store(db_path)
    conversation, ids = add_conversation(store, 20)
    vectors = unit_vectors(20, 16, seed=3) * 5.0  # not normalized on the way in: the index normalizes
    index = SqliteVectorIndex(store.db, db_path)
    index.add("m", rows_for(conversation, ids, vectors))
    (best, score), *_ = fresh_index(db_path).search("m", vectors[11], 3)
    assert best == ids[11]
    assert score == pytest.approx(1.0, abs=1e-5)


def test_models_never_mix(db_path):
    store = open_store(db_path)
    conversation, ids = add_conversation(store, 40)
    a, b = unit_vectors(40, 16, seed=4), unit_vectors(40, 16, seed=5)
    index = SqliteVectorIndex(store.db, db_path)
    index.add("model-a", rows_for(conversation, ids[:20], a[:20]))
    index.add("model-b", rows_for(conversation, ids[20:], b[20:]))
    found_b = {i for i, _ in fresh_index(db_path).search("model-b", a[3], 40)}
    assert found_b == set(ids[20:])
    found_a = {i for i, _ in index.search("model-a", b[30], 40)}
    assert found_a == set(ids[:20])
    assert index.search("model-c", a[3], 5) == []


def test_a_model_of_another_dimension_is_refused_with_a_reindex_hint(db_path):
    store = open_store(db_path)
    conversation, ids = add_conversation(store, 4)
    index = SqliteVectorIndex(store.db, db_path)
    index.add("m", rows_for(conversation, ids[:2], unit_vectors(2, 8, seed=6)))
    with pytest.raises(ValueError, match="reindex"):
        index.add("m", rows_for(conversation, ids[2:], unit_vectors(2, 12, seed=6)))
    with pytest.raises(ValueError, match="12 dimensions"):
        index.search("m", unit_vectors(1, 12, seed=7)[0], 3)


def test_deleted_conversation_vectors_are_gone(db_path):
    store = open_store(db_path)
    first, first_ids = add_conversation(store, 30)
    second, second_ids = add_conversation(store, 30)
    vectors = unit_vectors(60, 16, seed=8)
    index = SqliteVectorIndex(store.db, db_path)
    index.add("m", rows_for(first, first_ids, vectors[:30]))
    index.add("m", rows_for(second, second_ids, vectors[30:]))
    reader = fresh_index(db_path)
    assert len(reader.search("m", vectors[0], 100)) == 60

    store.delete_conversation(first)  # the older rows: the newest rowid is unchanged
    index.sync("m")
    for searcher in (index, reader, fresh_index(db_path)):
        assert {i for i, _ in searcher.search("m", vectors[0], 100)} == set(second_ids)
    count = store.db.execute("select count(*) from message_vectors").fetchone()[0]
    assert count == 30


def test_deleting_the_newest_rows_then_adding_is_not_mistaken_for_the_old_cache(db_path):
    store = open_store(db_path)
    old, old_ids = add_conversation(store, 10)
    kept, kept_ids = add_conversation(store, 10)  # message ids above the old ones: none get reused
    index = SqliteVectorIndex(store.db, db_path)
    index.add("m", rows_for(kept, kept_ids, unit_vectors(10, 8, seed=24)))
    index.add("m", rows_for(old, old_ids, unit_vectors(10, 8, seed=9)))  # the newest vector rows
    reader = fresh_index(db_path)
    reader.search("m", unit_vectors(1, 8, seed=1)[0], 5)  # holds the 20-row matrix

    store.delete_conversation(old)
    new, new_ids = add_conversation(store, 10)
    new_vectors = unit_vectors(10, 8, seed=10)
    writer = fresh_index(db_path)
    writer.add("m", rows_for(new, new_ids, new_vectors))  # as many rows as were deleted
    assert store.db.execute("select count(*) from message_vectors").fetchone()[0] == 20
    for searcher in (reader, writer, fresh_index(db_path)):
        assert {i for i, _ in searcher.search("m", new_vectors[0], 50)} == set(kept_ids) | set(new_ids)


def test_adding_a_vector_again_replaces_it(db_path):
    store = open_store(db_path)
    conversation, ids = add_conversation(store, 10)
    vectors = unit_vectors(11, 8, seed=11)
    index = SqliteVectorIndex(store.db, db_path)
    index.add("m", rows_for(conversation, ids, vectors[:10]))
    index.add("m", [VectorRow(ids[4], conversation, vectors[10])])
    for searcher in (index, fresh_index(db_path)):
        found = searcher.search("m", vectors[10], 20)
        assert found[0] == (ids[4], pytest.approx(1.0, abs=1e-5))
        assert len(found) == 10


def test_vectors_for_messages_deleted_meanwhile_are_skipped(db_path):
    store = open_store(db_path)
    conversation, ids = add_conversation(store, 3)
    store.delete_conversation(conversation)
    index = SqliteVectorIndex(store.db, db_path)
    index.add("m", rows_for(conversation, ids, unit_vectors(3, 8, seed=12)))
    assert store.db.execute("select count(*) from message_vectors").fetchone()[0] == 0
    assert index.search("m", unit_vectors(1, 8, seed=12)[0], 3) == []


def test_forget_model_drops_only_that_model(db_path):
    store = open_store(db_path)
    conversation, ids = add_conversation(store, 10)
    index = SqliteVectorIndex(store.db, db_path)
    index.add("a", rows_for(conversation, ids, unit_vectors(10, 8, seed=13)))
    index.add("b", rows_for(conversation, ids[:4], unit_vectors(4, 8, seed=14)))
    reader = fresh_index(db_path)
    assert len(reader.search("a", unit_vectors(1, 8, seed=1)[0], 20)) == 10
    assert index.forget_model("a") == 10
    assert reader.search("a", unit_vectors(1, 8, seed=1)[0], 20) == []
    assert len(reader.search("b", unit_vectors(1, 8, seed=1)[0], 20)) == 4
    assert index.missing_count("a") == 10 and index.missing_count("b") == 6


def test_missing_lists_agent_visible_messages_with_text_oldest_first(db_path):
    store = open_store(db_path)
    conversation, ids = add_conversation(store, 3)
    hidden = store.add_message(conversation, text_message("compacted away"), agent_visible=False).id
    blank = store.add_message(conversation, text_message("   ")).id
    tool_call = store.add_message(conversation, tool_call_only()).id
    reply = store.add_message(conversation, text_message("an answer", role="assistant")).id
    index = SqliteVectorIndex(store.db, db_path)

    pending = index.missing("m", 100)
    assert [p.message_id for p in pending] == [*ids, reply]
    assert pending[-1].content == "an answer" and pending[-1].role == "assistant"
    assert pending[0].conversation_id == conversation
    assert {hidden, blank, tool_call}.isdisjoint(p.message_id for p in pending)
    assert [p.message_id for p in index.missing("m", 2)] == ids[:2]
    assert [p.message_id for p in index.missing("m", 10, roles=("assistant",))] == [reply]

    index.add("m", rows_for(conversation, ids[:2], unit_vectors(2, 8, seed=15)))
    assert [p.message_id for p in index.missing("m", 100)] == [ids[2], reply]
    assert index.missing_count("m") == 2
    assert index.missing_count("other-model") == 4


def test_missing_counts_rows_without_a_vector_as_not_indexed_here(db_path):
    """A message recorded as indexed in qdrant (vector NULL) still needs a vector in the sqlite backend."""
    store = open_store(db_path)
    conversation, ids = add_conversation(store, 2)
    store.db.execute(
        "insert into message_vectors (message_id, model, conversation_id, dim, vector, created_at) "
        "values (?, 'm', ?, 8, null, 'now')",
        [ids[0], conversation],
    )
    store.db.conn.commit()
    index = SqliteVectorIndex(store.db, db_path)
    assert [p.message_id for p in index.missing("m", 10)] == ids
    assert index.search("m", unit_vectors(1, 8, seed=1)[0], 5) == []


def test_a_fresh_process_reads_the_cache_not_the_rows(db_path):
    store = open_store(db_path)
    conversation, ids = add_conversation(store, 50)
    vectors = unit_vectors(50, 8, seed=16)
    SqliteVectorIndex(store.db, db_path).add("m", rows_for(conversation, ids, vectors))
    # Corrupt the stored BLOBs behind the cache's back: a search that reads the cache still finds the
    # vectors as saved, which proves it did not read the rows.
    store.db.execute("update message_vectors set vector = zeroblob(32)")
    store.db.conn.commit()
    assert fresh_index(db_path).search("m", vectors[7], 1)[0][0] == ids[7]


def test_unreadable_cache_files_are_rebuilt_from_the_database(db_path):
    store = open_store(db_path)
    conversation, ids = add_conversation(store, 30)
    vectors = unit_vectors(30, 8, seed=17)
    SqliteVectorIndex(store.db, db_path).add("m", rows_for(conversation, ids, vectors))
    cache_dir = MatrixCache(Path(f"{db_path}.vectors"), "m").dir
    segment = next(p for p in cache_dir.iterdir() if p.suffix == ".bin")
    segment.write_bytes(segment.read_bytes()[:100])  # torn by hand
    assert fresh_index(db_path).search("m", vectors[5], 1)[0][0] == ids[5]
    (cache_dir / MANIFEST).write_text("{not json")
    assert fresh_index(db_path).search("m", vectors[6], 1)[0][0] == ids[6]
    # and the rebuilt cache was saved in place of the broken one
    manifest = json.loads((cache_dir / MANIFEST).read_text())
    assert manifest["rows_seen"] == 30 and sum(s["rows"] for s in manifest["segments"]) == 30


def _only_segment(db_path: Path) -> Path:
    cache_dir = MatrixCache(Path(f"{db_path}.vectors"), "m").dir
    [name] = [seg["file"] for seg in json.loads((cache_dir / MANIFEST).read_text())["segments"]]
    return cache_dir / name


def test_a_segment_with_one_flipped_byte_fails_its_checksum_and_is_rebuilt(db_path, caplog):
    store = open_store(db_path)
    conversation, ids = add_conversation(store, 30)
    vectors = unit_vectors(30, 8, seed=24)
    SqliteVectorIndex(store.db, db_path).add("m", rows_for(conversation, ids, vectors))
    assert MatrixCache(Path(f"{db_path}.vectors"), "m").load() is not None
    segment = _only_segment(db_path)
    before = segment.stat()
    with open(segment, "r+b") as fh:  # one bit of one float: still a finite, plausible value
        fh.seek(30 * 8 + 5 * 8 * 4 + 1)
        byte = fh.read(1)[0]
        fh.seek(-1, os.SEEK_CUR)
        fh.write(bytes([byte ^ 0x01]))
    os.utime(segment, ns=(before.st_atime_ns, before.st_mtime_ns))  # the mtime put back: the ctime still tells
    with caplog.at_level("WARNING", logger="zeph"):
        assert MatrixCache(Path(f"{db_path}.vectors"), "m").load() is None
        assert MatrixCache(Path(f"{db_path}.vectors"), "m").load() is None
    assert [r.getMessage() for r in caplog.records] == [
        f"vector cache segment {segment} fails its checksum: dropped, the cache is rebuilt from the database"
    ]
    found = fresh_index(db_path).search("m", vectors[5], 1)
    assert found[0][0] == ids[5] and found[0][1] == pytest.approx(1.0, abs=1e-6)
    # rebuilt from the table and saved: a new segment in place of the damaged one, which loads
    assert not segment.exists()
    assert MatrixCache(Path(f"{db_path}.vectors"), "m").load().size == 30


def test_a_copied_cache_is_checked_once_then_trusted_by_its_file_identity(db_path, tmp_path):
    store = open_store(db_path)
    conversation, ids = add_conversation(store, 20)
    vectors = unit_vectors(20, 8, seed=25)
    SqliteVectorIndex(store.db, db_path).add("m", rows_for(conversation, ids, vectors))
    store.db.conn.close()
    copied = tmp_path / "copy" / "zeph.db"
    shutil.copytree(db_path.parent, copied.parent)  # new inodes: every segment is hashed on its first load
    segment = _only_segment(copied)
    recorded = json.loads((segment.parent / MANIFEST).read_text())["segments"][0]["stamp"]
    assert recorded[0] != segment.stat().st_ino
    assert fresh_index(copied).search("m", vectors[4], 1)[0][0] == ids[4]
    st = segment.stat()
    stamp = json.loads((segment.parent / MANIFEST).read_text())["segments"][0]["stamp"]
    assert stamp == [st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns]


def test_a_cache_of_the_format_before_checksums_is_rebuilt(db_path):
    store = open_store(db_path)
    conversation, ids = add_conversation(store, 20)
    vectors = unit_vectors(20, 8, seed=26)
    SqliteVectorIndex(store.db, db_path).add("m", rows_for(conversation, ids, vectors))
    segment = _only_segment(db_path)
    manifest = json.loads((segment.parent / MANIFEST).read_text())
    manifest["format"] = 1
    manifest["segments"] = [{"file": s["file"], "rows": s["rows"]} for s in manifest["segments"]]
    (segment.parent / MANIFEST).write_text(json.dumps(manifest))
    assert fresh_index(db_path).search("m", vectors[2], 1)[0][0] == ids[2]
    manifest = json.loads((segment.parent / MANIFEST).read_text())
    assert manifest["format"] == 2 and all("crc" in s for s in manifest["segments"])


def test_a_segment_damaged_under_a_process_that_maps_it_is_rebuilt_without_warnings(db_path):
    import warnings

    store = open_store(db_path)
    conversation, ids = add_conversation(store, 40)
    vectors = unit_vectors(40, 8, seed=27)
    SqliteVectorIndex(store.db, db_path).add("m", rows_for(conversation, ids, vectors))
    reader = fresh_index(db_path)
    assert reader.search("m", vectors[3], 1)[0][0] == ids[3]  # mapped and held
    segment = _only_segment(db_path)
    with open(segment, "r+b") as fh:  # in place: the reader's mapping sees the new bytes
        fh.seek(40 * 8)
        fh.write(np.full(40 * 8, np.inf, dtype=np.float32).tobytes())
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        found = reader.search("m", vectors[3], 3)
    assert found[0][0] == ids[3] and all(-1.0 <= s <= 1.0 + 1e-6 for _, s in found)
    assert fresh_index(db_path).search("m", vectors[7], 1)[0][0] == ids[7]


def test_a_recreated_database_does_not_use_the_old_cache(db_path):
    store = open_store(db_path)
    conversation, ids = add_conversation(store, 5)
    SqliteVectorIndex(store.db, db_path).add("m", rows_for(conversation, ids, unit_vectors(5, 8, seed=18)))
    store.db.conn.close()
    for suffix in ("", "-wal", "-shm"):
        Path(f"{db_path}{suffix}").unlink(missing_ok=True)
    store = open_store(db_path)  # same path, new database, the old cache directory still there
    assert Path(f"{db_path}.vectors").exists()
    assert fresh_index(db_path).search("m", unit_vectors(1, 8, seed=18)[0], 5) == []


def test_appends_grow_segments_then_merge(db_path):
    store = open_store(db_path)
    conversation, ids = add_conversation(store, 200)
    vectors = unit_vectors(200, 8, seed=19)
    index = SqliteVectorIndex(store.db, db_path)
    index.add("m", rows_for(conversation, ids[:160], vectors[:160]))
    cache_dir = MatrixCache(Path(f"{db_path}.vectors"), "m").dir
    for start in range(160, 200, 2):
        index.add("m", rows_for(conversation, ids[start : start + 2], vectors[start : start + 2]))
        manifest = json.loads((cache_dir / MANIFEST).read_text())
        assert 1 <= len(manifest["segments"]) <= 9
        assert sum(s["rows"] for s in manifest["segments"]) == start + 2
        named = {s["file"] for s in manifest["segments"]}
        assert {p.name for p in cache_dir.iterdir()} == named | {MANIFEST, ".lock"}
    reader = fresh_index(db_path)
    for k in (0, 159, 170, 199):
        assert reader.search("m", vectors[k], 1)[0][0] == ids[k]


def test_a_database_path_of_none_keeps_the_matrix_in_memory(tmp_path):
    store = open_store(tmp_path / "z.db")
    conversation, ids = add_conversation(store, 10)
    vectors = unit_vectors(10, 8, seed=20)
    index = SqliteVectorIndex(store.db, None)
    index.add("m", rows_for(conversation, ids, vectors))
    assert index.search("m", vectors[2], 1)[0][0] == ids[2]
    assert not any(p.name.endswith(".vectors") for p in tmp_path.iterdir())


WRITER = textwrap.dedent(
    """
    import sys
    from pathlib import Path
    sys.path.insert(0, {root!r})
    from tests.vector_helpers import open_store, add_conversation, rows_for, unit_vectors
    from zeph_cli.features.memory.vectors.sqlite_index import SqliteVectorIndex
    path = Path({path!r})
    store = open_store(path)
    index = SqliteVectorIndex(store.db, path)
    for batch in range({batches}):
        conversation, ids = add_conversation(store, 25)
        index.add("m", rows_for(conversation, ids, unit_vectors(25, 16, seed=batch)))
        if batch % 7 == 6:
            store.delete_conversation(conversation)
            index.sync("m")
    print("done")
    """
)


def test_a_concurrent_writer_never_tears_what_readers_see(db_path):
    store = open_store(db_path)
    conversation, ids = add_conversation(store, 100)
    SqliteVectorIndex(store.db, db_path).add("m", rows_for(conversation, ids, unit_vectors(100, 16, seed=99)))
    writer = subprocess.Popen(
        [sys.executable, "-c", WRITER.format(root=str(ROOT), path=str(db_path), batches=40)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    query = unit_vectors(1, 16, seed=3)[0]
    searches = 0
    sizes = []
    reader = fresh_index(db_path)
    while writer.poll() is None or searches < 20:
        if searches % 3 == 0:
            reader = fresh_index(db_path)  # a new process's first search, and a held matrix's later ones
        found = reader.search("m", query, 5000)
        alive = {r[0] for r in store.db.execute("select id from messages")}
        # everything it returns was stored at some point; nothing stored before the search is missed
        assert all(isinstance(i, int) and -1.0001 <= s <= 1.0001 for i, s in found)
        assert set(ids) <= {i for i, _ in found}
        sizes.append(len([i for i, _ in found if i in alive]))
        searches += 1
    out, err = writer.communicate(timeout=60)
    assert writer.returncode == 0, err
    assert out.strip() == "done"
    assert max(sizes) > 100  # the readers saw the writer's rows arrive
    final = fresh_index(db_path).search("m", query, 10_000)
    expected = store.db.execute("select count(*) from message_vectors where model = 'm'").fetchone()[0]
    assert len(final) == expected == 100 + 40 * 25 - 5 * 25


def test_threads_with_their_own_connections_share_the_cache(db_path):
    import threading

    store = open_store(db_path)
    conversation, ids = add_conversation(store, 50)
    vectors = unit_vectors(50, 8, seed=21)
    SqliteVectorIndex(store.db, db_path).add("m", rows_for(conversation, ids, vectors))
    errors: list[BaseException] = []

    def write() -> None:
        try:
            local = open_store(db_path)
            index = SqliteVectorIndex(local.db, db_path)
            for seed in range(15):
                c, new_ids = add_conversation(local, 10)
                index.add("m", rows_for(c, new_ids, unit_vectors(10, 8, seed=100 + seed)))
        except BaseException as exc:  # noqa: BLE001 - reported below
            errors.append(exc)

    def read() -> None:
        try:
            index = fresh_index(db_path)
            for _ in range(60):
                found = index.search("m", vectors[9], 3)
                assert found[0][0] == ids[9]
        except BaseException as exc:  # noqa: BLE001
            errors.append(exc)

    threads = [threading.Thread(target=write), threading.Thread(target=read), threading.Thread(target=read)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    assert errors == []
    assert len(fresh_index(db_path).search("m", vectors[0], 1000)) == 200


def test_a_writer_killed_mid_save_leaves_a_usable_cache(db_path, tmp_path):
    store = open_store(db_path)
    conversation, ids = add_conversation(store, 20)
    vectors = unit_vectors(20, 8, seed=22)
    SqliteVectorIndex(store.db, db_path).add("m", rows_for(conversation, ids, vectors))
    cache_dir = MatrixCache(Path(f"{db_path}.vectors"), "m").dir
    # what a kill -9 between writing a segment and replacing the manifest leaves behind
    (cache_dir / ".seg-dead.bin.tmp").write_bytes(b"\0" * 50)
    (cache_dir / "seg-orphan.bin").write_bytes(b"\0" * 96)
    (cache_dir / ".manifest.json.dead.tmp").write_text("{")
    assert fresh_index(db_path).search("m", vectors[3], 1)[0][0] == ids[3]
    more, more_ids = add_conversation(store, 2)
    SqliteVectorIndex(store.db, db_path).add("m", rows_for(more, more_ids, unit_vectors(2, 8, seed=23)))
    leftovers = {p.name for p in cache_dir.iterdir()} & {".seg-dead.bin.tmp", "seg-orphan.bin", ".manifest.json.dead.tmp"}
    assert leftovers == set()
    assert os.path.exists(cache_dir / MANIFEST)


def test_newest_rowid_is_each_models_own_with_models_interleaved(db_path):
    """Read backwards from the table's newest row: another model's newer rows are stepped over, and a
    model without rows is 0 (the index says so without walking the table)."""
    from zeph_cli.features.memory import vector_table as table

    store = open_store(db_path)
    conversation, ids = add_conversation(store, 6)
    index = SqliteVectorIndex(store.db, db_path)
    assert table.newest_rowid(store.db, "a") == 0
    index.add("a", rows_for(conversation, ids[:2], unit_vectors(2, 8, seed=21)))
    index.add("b", rows_for(conversation, ids[:3], unit_vectors(3, 8, seed=22)))
    index.add("a", rows_for(conversation, ids[2:4], unit_vectors(2, 8, seed=23)))
    index.add("b", rows_for(conversation, ids[3:], unit_vectors(3, 8, seed=24)))
    rows = store.db.execute("select model, max(rowid) from message_vectors group by model").fetchall()
    for model, newest in rows:
        assert table.newest_rowid(store.db, model) == newest
    assert dict(rows)["a"] < dict(rows)["b"]
    assert table.newest_rowid(store.db, "c") == 0
    # a search of the older model sees all its rows, none of the other's
    assert sorted(i for i, _ in fresh_index(db_path).search("a", unit_vectors(1, 8, seed=1)[0], 20)) == ids[:4]


def test_a_session_in_worldbook_isolation_is_never_pending_for_embedding(db_path):
    from zeph_cli.features.worldbook.store import ISOLATED_KEY

    store = open_store(db_path)
    shared, shared_ids = add_conversation(store, 3)
    isolated, _ = add_conversation(store, 3)
    store.update_conversation(isolated, metadata={ISOLATED_KEY: True})
    index = fresh_index(db_path)
    assert [p.message_id for p in index.missing("m", 10)] == shared_ids  # catch-up and reindex alike
    assert index.missing_count("m") == 3
