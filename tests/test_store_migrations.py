"""The migrations runner over the shared tables' and the features' migrations, on real SQLite files.

`data/main_m015.db.gz` is a database zeph 0.1.0 wrote (all fifteen migrations, when they all lived in
`store/migrations.py`), with a session, a message, a worldbook entry at depth, a memory, a session
summary and the user profile. It must open unchanged: same migrations recorded in the same order with
the same stamps, the same `user_version` and schema, and its rows read through each feature's store;
migrations added since (from m016 on) are applied after them, leaving those alone.
"""

from __future__ import annotations

import gzip
import re
import shutil
import sqlite3
from pathlib import Path

import pytest

from zeph_cli.features.memory.long_term_store import MemoryStore
from zeph_cli.features.session_memory.store import DigestStore
from zeph_cli.features.worldbook.store import WorldbookStore
from zeph_cli.store import ConversationStore, open_database
from zeph_cli.store import migrations
from zeph_cli.store.migrations import MIGRATIONS, MIGRATIONS_TABLE

MAIN_DATABASE = Path(__file__).parent / "data" / "main_m015.db.gz"


@pytest.fixture
def main_database(tmp_path) -> Path:
    path = tmp_path / "zeph.db"
    with gzip.open(MAIN_DATABASE) as source, path.open("wb") as target:
        shutil.copyfileobj(source, target)
    return path


def recorded(path: Path) -> tuple[list[tuple[str, str]], int, list[tuple[str, str, str]]]:
    """The migrations recorded (name, stamp, in order), `user_version` and the schema of the database at `path`."""
    connection = sqlite3.connect(path)
    try:
        rows = connection.execute(f"select name, applied_at from {MIGRATIONS_TABLE} order by rowid").fetchall()
        version = connection.execute("PRAGMA user_version").fetchone()[0]
        schema = connection.execute("select type, name, sql from sqlite_master order by type, name").fetchall()
    finally:
        connection.close()
    return rows, version, schema


SINCE_M015 = [name for name, _ in MIGRATIONS if int(name[1:4]) > 15]


def test_a_database_the_previous_layout_wrote_opens_unchanged(main_database):
    before = recorded(main_database)
    assert [name for name, _ in before[0]] == [name for name, _ in MIGRATIONS][: len(before[0])]
    assert len(before[0]) == 15 and "m016_code_index" in SINCE_M015
    db = open_database(main_database)
    try:
        conversation = ConversationStore(db).list_conversations()[0]
        assert conversation.title == "kept across the move"
        [entry] = WorldbookStore(db).list(project_root="/work/project")
        assert (entry.content, entry.position, entry.depth) == ("Staging listens on port 8443.", "at_depth", 2)
        assert [memory.content for memory in MemoryStore(db).list(scope="user")] == ["The user prefers tabs."]
        digests = DigestStore(db)
        assert digests.get(conversation.id).text == "Asked about the staging port."
        assert digests.profile().text == "Prefers tabs."
    finally:
        db.close()
    after = recorded(main_database)
    assert after[0][:15] == before[0]  # the same migrations, stamps and order
    assert [name for name, _ in after[0][15:]] == SINCE_M015
    assert (before[1], after[1]) == (15, len(MIGRATIONS))
    kept = {(kind, name): sql for kind, name, sql in after[2]}
    assert all(kept.get((kind, name)) == sql for kind, name, sql in before[2])
    assert ("table", "code_chunks") in kept and ("table", "code_chunks") not in {(k, n) for k, n, _ in before[2]}


def test_a_new_database_gets_the_same_schema_and_migrations_as_before(main_database, tmp_path):
    db = open_database(tmp_path / "new.db")
    db.close()
    new_rows, new_version, new_schema = recorded(tmp_path / "new.db")
    db = open_database(main_database)  # brought up to date
    db.close()
    main_rows, main_version, main_schema = recorded(main_database)
    assert [name for name, _ in new_rows] == [name for name, _ in main_rows] == [name for name, _ in MIGRATIONS]
    assert (new_version, new_schema) == (main_version, main_schema)


def test_the_features_register_their_own_migrations_in_number_order():
    homes = {name: fn.__module__ for name, fn in MIGRATIONS}
    assert homes["m001_conversations_and_messages"] == "zeph_cli.store.migrations"
    assert homes["m009_message_vectors"] == homes["m010_long_term_memories"] == "zeph_cli.features.memory.migrations"
    assert homes["m011_worldbook"] == "zeph_cli.features.worldbook.migrations"
    assert {homes[name] for name in homes if name[:4] in ("m012", "m013", "m014")} == {
        "zeph_cli.features.session_memory.migrations"}
    assert homes["m016_code_index"] == "zeph_cli.features.code_index.migrations"
    numbers = [int(re.match(r"m(\d+)_", name).group(1)) for name, _ in MIGRATIONS]
    assert numbers == sorted(set(numbers))


def test_two_migrations_with_one_number_are_refused_and_not_registered():
    def m011_another_table(db):  # pragma: no cover - never run
        pass

    before = list(MIGRATIONS)
    with pytest.raises(RuntimeError, match=r"m011_worldbook and m011_another_table share the number 11"):
        migrations.migration(m011_another_table)
    assert MIGRATIONS == before
