"""The worldbook store on real SQLite files: binding, what is in force, edits, validation."""

from __future__ import annotations

from pathlib import Path

import pytest

from zeph_cli.errors import NotFound, UsageError
from zeph_cli.store import ConversationStore, open_database
from zeph_cli.features.worldbook.store import WorldbookStore


@pytest.fixture
def db_path(tmp_path: Path) -> Path:
    return tmp_path / "zeph.db"


@pytest.fixture
def store(db_path: Path):
    db = open_database(db_path)
    yield WorldbookStore(db)
    db.close()


def session(store: WorldbookStore) -> int:
    return ConversationStore(store.db).create_conversation(provider="p", model="m", cwd="/", title="s").id


def test_an_entry_is_stored_and_read_back_from_a_fresh_connection(store, db_path):
    saved = store.add("  The dragon is named Smaug.  ", keywords=["dragon", r"\bsmaug\b"], regex=True,
                      case_sensitive=True, position="at_depth", depth=3, order=7, project_root="/src/app")
    reopened = WorldbookStore(open_database(db_path))
    try:
        record = reopened.get(saved.id)
    finally:
        reopened.db.close()
    assert record.content == "The dragon is named Smaug."
    assert record.keywords == ("dragon", r"\bsmaug\b") and record.regex and record.case_sensitive
    assert (record.position, record.depth, record.order, record.enabled) == ("at_depth", 3, 7, True)
    assert (record.scope, record.project_root, record.conversation_id) == ("project", "/src/app", None)
    assert record.created_at == record.updated_at and record.as_json()["keywords"] == ["dragon", r"\bsmaug\b"]


def test_in_force_is_this_project_and_this_session_enabled_entries(store):
    here, there = session(store), session(store)
    mine = store.add("project lore", project_root="/src/app").id
    store.add("other project", project_root="/src/other")
    ours = store.add("session lore", conversation_id=here).id
    store.add("other session", conversation_id=there)
    off = store.add("switched off", project_root="/src/app", enabled=False).id
    assert [r.id for r in store.in_force("/src/app", here)] == [mine, ours]
    assert [r.id for r in store.list("/src/app", here)] == [mine, ours, off]
    assert len(store.list()) == 5
    store.update(off, enabled=True)
    assert off in [r.id for r in store.in_force("/src/app", None)]


def test_a_session_entry_goes_with_its_session(store):
    sid = session(store)
    store.add("lore", conversation_id=sid)
    store.db.execute("delete from conversations where id = ?", [sid])
    assert store.list() == []


@pytest.mark.parametrize(
    ("kwargs", "needle"),
    [
        ({"content": "   "}, "needs some content"),
        ({"position": "middle"}, "'middle' is not a worldbook position"),
        ({"position": "an_top", "depth": 2}, "--depth goes with --position at_depth"),
        ({"position": "at_depth", "depth": -1}, "--depth must be 0 or more"),
        ({"keywords": ["(oops"], "regex": True}, "keyword '(oops' is not a valid regex"),
        ({"keywords": ["ok", " "]}, "keyword is empty"),
        ({"conversation_id": 999}, "no session with id 999"),
        ({"project_root": None}, "needs a project root"),
    ],
)
def test_bad_entries_are_refused_and_nothing_is_stored(store, kwargs, needle):
    args = {"content": "lore", "project_root": "/src/app", **kwargs}
    with pytest.raises(UsageError, match=needle.replace("(", r"\(")):
        store.add(args.pop("content"), **args)
    assert store.list() == []


def test_update_checks_the_result_and_keeps_what_is_not_changed(store):
    record = store.add("lore", keywords=["elf"], position="at_depth", depth=2, project_root="/p")
    with pytest.raises(UsageError, match="not a valid regex"):
        store.update(record.id, keywords=["[x"], regex=True)
    assert store.get(record.id) == record
    moved = store.update(record.id, position="outlet")
    assert (moved.position, moved.depth, moved.keywords) == ("outlet", 0, ("elf",))
    assert store.update(moved.id, order=100) == moved  # nothing changed: not touched
    store.remove(record.id)
    with pytest.raises(NotFound, match="no worldbook entry with id"):
        store.get(record.id)


def test_a_turn_is_isolated_only_when_asked_and_entries_are_in_force(store):
    from zeph_cli.config import WorldbookConfig
    from zeph_cli.messages import Message
    from zeph_cli.features.worldbook.turn import Worldbook

    sid = session(store)
    book = Worldbook(store.db, WorldbookConfig(), "/src/app")
    asked = {"worldbook_isolated": True}
    assert not book.for_turn(sid, asked, []).isolated  # nothing bound: nothing to isolate for
    store.add("lore", keywords=["elf"], conversation_id=sid)
    turn = book.for_turn(sid, asked, [Message.user("an Elf!")])
    from zeph_cli.features import policy_for

    policy = policy_for(turn.isolated)
    assert turn.isolated and not policy.allows("memory") and policy.allows("topic prompt")
    assert not policy.allows_tools("memory tools") and not policy.allows_tools("MCP tools")
    assert [e.content for e in turn.triggered] == ["lore"]
    assert not book.for_turn(sid, {}, []).isolated
    assert not Worldbook(store.db, WorldbookConfig(enabled=False), "/src/app").for_turn(sid, asked, []).isolated


def test_worldbook_layers_say_when_nothing_fits_and_when_isolation_is_on():
    from zeph_cli.context.worldbook_block import WorldbookEntry
    from zeph_cli.context.report import ContextReport
    from zeph_cli.tokens import Calibration, default_counter
    from zeph_cli.features.worldbook.turn import WorldbookTurn, worldbook_layers

    big = WorldbookEntry(4, "lore " * 200, position="after")
    turn = WorldbookTurn((big,), (big,), isolated=True, isolation_asked=True)
    layers = worldbook_layers(turn, 50, default_counter(), Calibration())
    assert layers.after == [] and [b.name for b in layers.notes] == ["worldbook isolation", "worldbook"]
    assert "left out over the worldbook share (50 tokens): #4" in layers.notes[1].detail
    report = layers.annotate(ContextReport(blocks=(), window=1, budget=0, reserved_for_response=0,
                                           soft_threshold=0.7, hard_threshold=0.9))
    assert report.used_tokens == 0 and report.block("worldbook isolation").detail.startswith("on: not sent: long-term memory")
    fits = worldbook_layers(WorldbookTurn((big,), (big,)), None, default_counter(), Calibration())
    assert [layer.name for layer in fits.after] == ["worldbook after"] and fits.notes == []
