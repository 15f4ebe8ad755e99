"""zeph_cli.store on real SQLite files: pragmas, migrations, conversations, visibility, search, calibration."""

from __future__ import annotations

import random
import sqlite3
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
from zeph_cli.store.sqlite import Database

from zeph_cli.errors import NotFound, StoreError
from zeph_cli.messages import Message, TextPart, ToolCallPart, ToolResultPart
from zeph_cli.store import ConversationStore, open_database
from zeph_cli.store.migrations import MIGRATIONS, MIGRATIONS_TABLE, migrate
from zeph_cli.tokens import Calibration


@pytest.fixture
def db_path(tmp_path) -> Path:
    return tmp_path / "data" / "zeph.db"


@pytest.fixture
def store(db_path):
    s = ConversationStore(open_database(db_path))
    yield s
    s.close()


def new_conversation(store: ConversationStore, title: str = "", **kw):
    return store.create_conversation(provider=kw.get("provider", "anthropic"), model=kw.get("model", "m"), cwd="/w", title=title)


def texts(messages) -> list[str]:
    return [m.message.content for m in messages]


# ---- opening ---------------------------------------------------------------------------------


def test_pragmas_after_open(db_path):
    db = open_database(db_path)
    try:
        assert db_path.is_file()  # parent directory was created
        assert db.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
        assert db.execute("PRAGMA foreign_keys").fetchone()[0] == 1
        assert db.execute("PRAGMA busy_timeout").fetchone()[0] == 5000
    finally:
        db.close()


def test_foreign_keys_are_enforced(store):
    with pytest.raises(sqlite3.IntegrityError):
        store.db.execute(
            "insert into messages (conversation_id, role, content, created_at) values (999, 'user', 'x', 'now')"
        )


def test_migrations_recorded_in_order(db_path):
    db = open_database(db_path)
    try:
        names = [r[0] for r in db.execute(f"select name from {MIGRATIONS_TABLE} order by rowid").fetchall()]
        assert names == [name for name, _ in MIGRATIONS]
        # migrations are append-only: the first ones keep their names and order
        assert names[:4] == [
            "m001_conversations_and_messages",
            "m002_message_parts_and_visibility",
            "m003_message_search",
            "m004_conversation_settings_and_calibration",
        ]
        stamps = [r[0] for r in db.execute(f"select applied_at from {MIGRATIONS_TABLE} order by rowid").fetchall()]
        assert all(stamps) and stamps == sorted(stamps)
    finally:
        db.close()


def test_reopening_applies_nothing_new(db_path):
    first = ConversationStore(open_database(db_path))
    conv = new_conversation(first, "keep me")
    first.add_message(conv.id, Message.user("still here"))
    before = list(first.db[MIGRATIONS_TABLE].rows)
    first.close()

    db = open_database(db_path)
    try:
        assert list(db[MIGRATIONS_TABLE].rows) == before  # same rows, same applied_at stamps
        assert migrate(db) == []
        assert texts(ConversationStore(db).history(conv.id)) == ["still here"]
    finally:
        db.close()


def test_old_schema_database_is_migrated(db_path):
    db_path.parent.mkdir(parents=True)
    old = Database(sqlite3.connect(db_path))
    assert migrate(old, upto="m001_conversations_and_messages") == ["m001_conversations_and_messages"]
    assert "agent_visible" not in old["messages"].columns_dict
    old["conversations"].insert(
        {
            "id": 7,
            "title": "legacy chat",
            "created_at": "2024-01-01T00:00:00+00:00",
            "updated_at": "2024-01-01T00:00:02+00:00",
            "provider": "openai",
            "model": "gpt-4o",
            "cwd": "/old",
        }
    )
    old["messages"].insert_all(
        [
            {"conversation_id": 7, "role": "user", "content": "where is the platypus config", "created_at": "2024-01-01T00:00:01+00:00"},
            {"conversation_id": 7, "role": "assistant", "content": "in platypus.toml", "created_at": "2024-01-01T00:00:02+00:00"},
        ]
    )
    old.close()

    db = open_database(db_path)
    store = ConversationStore(db)
    try:
        columns = db["messages"].columns_dict
        for name in ("parts", "agent_visible", "user_visible", "compacted_at", "metadata", "token_count", "token_counter"):
            assert name in columns
        raw = list(db.query("select agent_visible, user_visible, metadata, parts from messages order by id"))
        assert raw == [{"agent_visible": 1, "user_visible": 1, "metadata": "{}", "parts": None}] * 2
        applied = [r["name"] for r in db.query(f"select name from {MIGRATIONS_TABLE} order by rowid")]
        assert applied == [name for name, _ in MIGRATIONS]

        history = store.history(7)
        assert [(m.role, m.message.content) for m in history] == [
            ("user", "where is the platypus config"),
            ("assistant", "in platypus.toml"),
        ]
        assert history[0].message.parts == (TextPart("where is the platypus config"),)
        assert all(m.agent_visible and m.user_visible and m.metadata == {} for m in history)
        assert len(store.history(7, agent_visible=True)) == 2

        conv = store.get_conversation(7)
        assert (conv.title, conv.provider, conv.metadata, conv.message_count) == ("legacy chat", "openai", {}, 2)

        hits = store.search("platypus")
        assert {h.message_id for h in hits} == {m.id for m in history}
        assert all(h.conversation_id == 7 and h.title == "legacy chat" for h in hits)

        # the migrated database keeps working for new writes
        added = store.add_message(7, Message.user("new platypus question"))
        assert len(store.search("platypus")) == 3
        assert store.history(7)[-1].id == added.id
    finally:
        store.close()


def test_corrupt_file_raises_store_error_naming_path(db_path):
    db_path.parent.mkdir(parents=True)
    db_path.write_bytes(random.Random(1234).randbytes(16384))
    with pytest.raises(StoreError) as info:
        open_database(db_path)
    assert str(db_path) in str(info.value)


def test_text_file_is_not_a_database(db_path):
    db_path.parent.mkdir(parents=True)
    db_path.write_text("this is not sqlite at all\n" * 200, encoding="utf-8")
    with pytest.raises(StoreError) as info:
        open_database(db_path)
    assert str(db_path) in str(info.value)


def test_unwritable_data_dir_is_store_error(tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("x")
    with pytest.raises(StoreError) as info:
        open_database(blocker / "sub" / "zeph.db")
    assert str(blocker / "sub") in str(info.value)


# ---- conversations and messages ----------------------------------------------------------------


def test_add_and_history_in_order(store):
    conv = new_conversation(store, "first question")
    other = new_conversation(store, "other")
    words = ["one", "two", "three", "four", "five"]
    added = []
    for i, word in enumerate(words):
        msg = Message.user(word) if i % 2 == 0 else Message.assistant(word)
        added.append(store.add_message(conv.id, msg))
        store.add_message(other.id, Message.user(f"noise {word}"))
    history = store.history(conv.id)
    assert texts(history) == words
    assert [m.id for m in history] == [a.id for a in added]
    assert [m.role for m in history] == ["user", "assistant", "user", "assistant", "user"]
    assert all(m.conversation_id == conv.id for m in history)
    assert history[0].created_at <= history[-1].created_at
    assert len(store.history(other.id)) == 5


def test_history_of_unknown_conversation_is_empty(store):
    assert store.history(424242) == []


def test_create_conversation_fields_and_title(store):
    long = "word " * 40
    conv = store.create_conversation(provider="ollama", model="qwen3", cwd="/proj", title=long, metadata={"k": 1})
    got = store.get_conversation(conv.id)
    assert got == conv
    assert (got.provider, got.model, got.cwd, got.metadata, got.message_count) == ("ollama", "qwen3", "/proj", {"k": 1}, 0)
    assert len(got.title) <= 60
    assert got.title.endswith("…")
    with pytest.raises(NotFound):
        store.get_conversation(conv.id + 100)


def test_visibility_filters(store):
    conv = new_conversation(store)
    store.add_message(conv.id, Message.user("normal"))
    store.add_message(conv.id, Message.assistant("compacted original"), agent_visible=False)
    store.add_message(conv.id, Message.assistant("compaction summary"), user_visible=False)
    store.add_message(conv.id, Message.user("hidden from both"), agent_visible=False, user_visible=False)

    assert texts(store.history(conv.id)) == ["normal", "compacted original", "compaction summary", "hidden from both"]
    assert texts(store.history(conv.id, agent_visible=True)) == ["normal", "compaction summary"]
    assert texts(store.history(conv.id, user_visible=True)) == ["normal", "compacted original"]
    assert texts(store.history(conv.id, agent_visible=True, user_visible=True)) == ["normal"]
    assert texts(store.history(conv.id, agent_visible=False)) == ["compacted original", "hidden from both"]
    assert texts(store.history(conv.id, user_visible=False)) == ["compaction summary", "hidden from both"]

    flags = [(m.agent_visible, m.user_visible) for m in store.history(conv.id)]
    assert flags == [(True, True), (False, True), (True, False), (False, False)]


def test_parts_round_trip(db_path):
    store = ConversationStore(open_database(db_path))
    conv = new_conversation(store)
    call = Message(
        "assistant",
        (
            TextPart("Let me read it."),
            ToolCallPart("call_1", "read_file", {"path": "src/ü.py", "lines": [1, 20], "opts": {"raw": True}}),
            ToolCallPart("call_2", "list_dir", {}),
        ),
    )
    result = Message(
        "tool",
        (
            ToolResultPart("call_1", "print('hi')\n", name="read_file"),
            ToolResultPart("call_2", "permission denied", name="list_dir", is_error=True),
        ),
    )
    store.add_message(conv.id, call)
    store.add_message(conv.id, result)
    store.close()

    reopened = ConversationStore(open_database(db_path))
    try:
        history = reopened.history(conv.id)
        assert [m.message for m in history] == [call, result]
        assert history[0].message.tool_calls[0].arguments == {"path": "src/ü.py", "lines": [1, 20], "opts": {"raw": True}}
        assert history[1].message.tool_results[1].is_error is True
        # content column holds the searchable text (text parts and tool results)
        assert history[1].message.content == "print('hi')\npermission denied"
        assert reopened.search("permission")[0].message_id == history[1].id
    finally:
        reopened.close()


def test_metadata_round_trip(store):
    conv = new_conversation(store)
    meta = {"partial": True, "deferred_summary": "read a.py: ok", "nested": {"ü": [1, 2.5, None]}}
    added = store.add_message(conv.id, Message.assistant("half"), metadata=meta)
    plain = store.add_message(conv.id, Message.assistant("whole"))
    assert added.metadata == meta
    history = store.history(conv.id)
    assert history[0].metadata == meta
    assert history[0].partial is True
    assert history[1].metadata == {}
    assert history[1].partial is False
    assert plain.partial is False
    raw = store.db.execute("select metadata from messages where id = ?", [plain.id]).fetchone()[0]
    assert raw == "{}"


def test_set_token_counts(db_path):
    store = ConversationStore(open_database(db_path))
    conv = new_conversation(store)
    a = store.add_message(conv.id, Message.user("alpha"))
    b = store.add_message(conv.id, Message.assistant("beta"), token_count=3, token_counter="estimate")
    c = store.add_message(conv.id, Message.user("gamma"))
    assert [(m.token_count, m.token_counter) for m in store.history(conv.id)] == [
        (None, None),
        (3, "estimate"),
        (None, None),
    ]
    store.set_token_counts([(a.id, 11, "cl100k_base"), (b.id, 22, "cl100k_base")])
    store.set_token_counts([])  # nothing to do, no error
    store.close()

    reopened = ConversationStore(open_database(db_path))
    try:
        got = {m.id: (m.token_count, m.token_counter) for m in reopened.history(conv.id)}
        assert got == {a.id: (11, "cl100k_base"), b.id: (22, "cl100k_base"), c.id: (None, None)}
    finally:
        reopened.close()


def test_add_message_touches_conversation(store):
    conv = new_conversation(store)
    store.add_message(conv.id, Message.user("hi"))
    after = store.get_conversation(conv.id)
    assert after.updated_at > conv.updated_at
    assert after.created_at == conv.created_at


def test_update_conversation(store):
    conv = new_conversation(store, "before")
    store.update_conversation(conv.id, title="after", metadata={"budget": 1000})
    got = store.get_conversation(conv.id)
    assert (got.title, got.metadata) == ("after", {"budget": 1000})
    assert got.updated_at > conv.updated_at


def test_query_only_reads_and_never_drops_a_repeated_column(store):
    conversation = store.create_conversation(provider="p", model="m", cwd="/", title="kept")
    with pytest.raises(ValueError, match="only reads"):
        store.db.query("delete from conversations")
    assert store.get_conversation(conversation.id).title == "kept"  # nothing ran
    with pytest.raises(ValueError, match=r"repeats the column names \['a'\]"):
        store.db.query("select 1 as a, 2 as a")
    assert list(store.db.query("  with t(a, b) as (values (1, 2)) select a, b from t")) == [{"a": 1, "b": 2}]


def test_updating_a_missing_conversation_is_not_found(store):
    """As `get_conversation` says (sqlite-utils' `update` raised too): never a silent no-op."""
    with pytest.raises(NotFound):
        store.update_conversation(999, title="nobody")


# ---- search -----------------------------------------------------------------------------------


def test_search_ranked_with_marked_snippet(store):
    conv = new_conversation(store, "animals")
    other = new_conversation(store, "more animals")
    weak = store.add_message(
        conv.id,
        Message.user(
            "a long rambling note about many different animals of the southern continent, "
            "among them, somewhere near the end, a single kangaroo and lots of other words"
        ),
    )
    strong = store.add_message(other.id, Message.assistant("kangaroo kangaroo kangaroo"))
    store.add_message(conv.id, Message.user("nothing relevant here"))

    hits = store.search("kangaroo")
    assert [h.message_id for h in hits] == [strong.id, weak.id]
    assert hits[0].conversation_id == other.id
    assert hits[0].title == "more animals"
    assert hits[0].role == "assistant"
    assert hits[1].role == "user"
    assert hits[0].created_at == strong.created_at
    for hit in hits:
        assert "[kangaroo]" in hit.snippet
    assert "[" not in hits[1].snippet.replace("[kangaroo]", "")
    assert store.search("wombat") == []
    assert len(store.search("kangaroo", limit=1)) == 1


def test_search_is_case_insensitive_and_multiword(store):
    conv = new_conversation(store)
    both = store.add_message(conv.id, Message.user("The Build FAILED on linux"))
    store.add_message(conv.id, Message.user("the build passed"))
    assert [h.message_id for h in store.search("failed build")] == [both.id]


def test_search_excludes_user_invisible_rows(store):
    conv = new_conversation(store)
    seen = store.add_message(conv.id, Message.user("zebra crossing"), agent_visible=False)
    store.add_message(conv.id, Message.assistant("[summary] zebra crossing discussed"), user_visible=False)
    hits = store.search("zebra")
    assert [h.message_id for h in hits] == [seen.id]


@pytest.mark.parametrize(
    "query",
    ['foo"bar (', '"', "(", ")", "*", "AND", "foo OR", "NOT bar", "NEAR(", "col:val", "-x", "^", "'", "a' OR '1'='1", ""],
)
def test_search_punctuation_does_not_raise(store, query):
    conv = new_conversation(store)
    store.add_message(conv.id, Message.user('foo"bar ( baz'))
    hits = store.search(query)
    assert isinstance(hits, list)


def test_search_punctuation_still_finds_words(store):
    conv = new_conversation(store)
    target = store.add_message(conv.id, Message.user("error: foo.bar() failed with (code 3)"))
    store.add_message(conv.id, Message.user("unrelated"))
    assert [h.message_id for h in store.search("foo.bar()")] == [target.id]
    assert [h.message_id for h in store.search('failed "code')] == [target.id]
    # FTS operators are taken literally, not as syntax
    assert store.search("unrelated OR failed") == []


# ---- listing and deleting ---------------------------------------------------------------------


def test_list_conversations_order_and_counts(store):
    assert store.list_conversations() == []
    a = new_conversation(store, "a")
    b = new_conversation(store, "b")
    c = new_conversation(store, "c")
    assert [x.id for x in store.list_conversations()] == [c.id, b.id, a.id]

    store.add_message(a.id, Message.user("1"))
    store.add_message(a.id, Message.assistant("2"))
    store.add_message(a.id, Message.assistant("summary only the agent sees"), user_visible=False)
    store.add_message(b.id, Message.user("3"))
    listed = store.list_conversations()
    assert [x.id for x in listed] == [b.id, a.id, c.id]  # most recently updated first
    counts = {x.id: x.message_count for x in listed}
    assert counts == {a.id: 2, b.id: 1, c.id: 0}  # counts what the user can scroll back through
    assert store.get_conversation(a.id).message_count == 2
    assert [x.id for x in store.list_conversations(limit=2)] == [b.id, a.id]


def test_latest_conversation(store):
    assert store.latest_conversation() is None
    a = new_conversation(store, "a")
    assert store.latest_conversation().id == a.id
    b = new_conversation(store, "b")
    assert store.latest_conversation().id == b.id
    store.add_message(a.id, Message.user("back to a"))
    latest = store.latest_conversation()
    assert latest.id == a.id
    assert latest.message_count == 1


def test_delete_conversation(store):
    doomed = new_conversation(store, "doomed")
    kept = new_conversation(store, "kept")
    for word in ("armadillo one", "armadillo two", "armadillo three"):
        store.add_message(doomed.id, Message.user(word))
    survivor = store.add_message(kept.id, Message.user("armadillo survivor"))
    assert len(store.search("armadillo")) == 4

    assert store.delete_conversation(doomed.id) == 3
    with pytest.raises(NotFound):
        store.get_conversation(doomed.id)
    assert store.history(doomed.id) == []
    assert store.db.execute("select count(*) from messages where conversation_id = ?", [doomed.id]).fetchone()[0] == 0
    assert [h.message_id for h in store.search("armadillo")] == [survivor.id]
    assert [c.id for c in store.list_conversations()] == [kept.id]
    assert texts(store.history(kept.id)) == ["armadillo survivor"]


def test_delete_missing_conversation_raises_not_found(store):
    conv = new_conversation(store)
    with pytest.raises(NotFound) as info:
        store.delete_conversation(conv.id + 41)
    assert str(conv.id + 41) in str(info.value)
    assert store.get_conversation(conv.id).id == conv.id


# ---- calibration --------------------------------------------------------------------------------


def test_calibration_round_trip(db_path):
    store = ConversationStore(open_database(db_path))
    assert store.calibration("anthropic", "claude") == Calibration()
    store.save_calibration("anthropic", "claude", Calibration(1.25, 3))
    store.save_calibration("openai", "gpt-4o", Calibration(0.8, 1))
    store.save_calibration("anthropic", "claude", Calibration(1.3, 4))  # upsert, not a second row
    store.close()

    reopened = ConversationStore(open_database(db_path))
    try:
        assert reopened.calibration("anthropic", "claude") == Calibration(1.3, 4)
        assert reopened.calibration("openai", "gpt-4o") == Calibration(0.8, 1)
        assert reopened.calibration("openai", "claude") == Calibration()
        assert reopened.db.execute("select count(*) from token_calibration").fetchone()[0] == 2
    finally:
        reopened.close()


# ---- two connections ------------------------------------------------------------------------------


def test_two_stores_on_one_file_both_write(db_path):
    a = ConversationStore(open_database(db_path))
    b = ConversationStore(open_database(db_path))
    try:
        conv = new_conversation(a, "shared")
        a.add_message(conv.id, Message.user("from a"))
        b.add_message(conv.id, Message.assistant("from b"))
        a.add_message(conv.id, Message.user("a again"))
        other = new_conversation(b, "b's own")
        assert texts(a.history(conv.id)) == ["from a", "from b", "a again"]
        assert texts(b.history(conv.id)) == ["from a", "from b", "a again"]
        assert {c.id for c in a.list_conversations()} == {conv.id, other.id}
    finally:
        a.close()
        b.close()


def test_writer_waits_for_other_connection_lock(db_path):
    """While another connection holds the write lock, a write waits (busy timeout) instead of failing."""
    b = ConversationStore(open_database(db_path))
    conv = new_conversation(b, "contended")
    locked = threading.Event()
    errors: list[BaseException] = []
    hold = 0.3

    def hold_write_lock() -> None:
        try:
            a = ConversationStore(open_database(db_path))
            a.db.execute("BEGIN IMMEDIATE")
            a.db.execute(
                "insert into messages (conversation_id, role, content, created_at) values (?, 'user', 'from a', 'x')",
                [conv.id],
            )
            locked.set()
            time.sleep(hold)
            a.db.execute("COMMIT")
            a.close()
        except BaseException as exc:  # reported to the main thread
            errors.append(exc)
            locked.set()

    thread = threading.Thread(target=hold_write_lock)
    thread.start()
    try:
        assert locked.wait(30)
        start = time.monotonic()
        b.add_message(conv.id, Message.assistant("from b"))
        waited = time.monotonic() - start
        thread.join(5)
        assert errors == []
        assert waited >= hold / 2  # it really had to wait for the lock
        assert texts(b.history(conv.id)) == ["from a", "from b"]
    finally:
        thread.join(5)
        b.close()


# ---- a database a newer zeph wrote ----------------------------------------------------------


def test_user_version_counts_the_applied_migrations(db_path):
    db = open_database(db_path)
    assert db.execute("PRAGMA user_version").fetchone()[0] == len(MIGRATIONS)
    db.conn.close()


@pytest.mark.parametrize("newer", ["unknown migration", "higher user_version"])
def test_a_database_a_newer_zeph_wrote_is_refused_untouched(db_path, newer):
    db = open_database(db_path)
    ConversationStore(db).create_conversation(provider="p", model="m", cwd="/", title="kept")
    if newer == "unknown migration":
        db[MIGRATIONS_TABLE].insert({"name": "m999_from_the_future", "applied_at": "2030-01-01"})
    else:
        db.execute(f"PRAGMA user_version = {len(MIGRATIONS) + 3}")
    db.conn.close()
    before = sqlite3.connect(db_path)
    snapshot = (list(before.iterdump()), before.execute("PRAGMA user_version").fetchone()[0])
    before.close()
    with pytest.raises(StoreError) as caught:
        open_database(db_path)
    message = str(caught.value)
    assert str(db_path) in message and "written by a newer zeph" in message and "nothing was written" in message
    assert ("m999_from_the_future" if newer == "unknown migration" else f"{len(MIGRATIONS) + 3}") in message
    after = sqlite3.connect(db_path)
    assert (list(after.iterdump()), after.execute("PRAGMA user_version").fetchone()[0]) == snapshot
    after.close()


RACE = """
import sys, threading, time
done = {}
def other():
    import numpy
    done["sum"] = float(numpy.ones(3).sum())
thread = threading.Thread(target=other)
thread.start()
time.sleep(float(sys.argv[1]))
import zeph_cli.store.schema_library
zeph_cli.store.schema_library.import_without_numpy()
thread.join()
import sqlite_utils.db
print(done["sum"], sqlite_utils.db.np is None or sqlite_utils.db.np is sys.modules["numpy"])
"""


@pytest.mark.parametrize("delay", [0, 0.01, 0.03])
def test_the_store_imports_beside_a_thread_importing_numpy(delay):
    """sqlite-utils is imported without numpy on the opening thread only: a thread importing numpy meanwhile
    (the embedder, the embedded model) gets it, and neither waits on the other for ever."""
    result = subprocess.run([sys.executable, "-c", RACE, str(delay)], capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stderr[-2000:]
    assert result.stdout.split() == ["3.0", "True"]


def test_the_store_alone_imports_no_numpy():
    code = (
        "import sys, zeph_cli.store.schema_library as s; s.import_without_numpy(); "
        "print('sqlite_utils' in sys.modules, 'numpy' in sys.modules, 'pandas' in sys.modules)"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert result.stdout.split() == ["True", "False", "False"]
