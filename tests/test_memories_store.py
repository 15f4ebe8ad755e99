"""The memories store on real SQLite files: scopes, visibility, archive, edit, forget, vectors."""

from __future__ import annotations

from pathlib import Path

import pytest

from zeph_cli.errors import NotFound, UsageError
from zeph_cli.store import ConversationStore, open_database
from zeph_cli.features.memory.long_term_store import MemoryStore


@pytest.fixture
def db_path(tmp_path: Path) -> Path:
    return tmp_path / "zeph.db"


@pytest.fixture
def store(db_path: Path):
    db = open_database(db_path)
    yield MemoryStore(db)
    db.close()


def conversation(db, title: str = "s") -> int:
    return ConversationStore(db).create_conversation(provider="p", model="m", cwd="/", title=title).id


def test_a_memory_is_stored_and_read_back_from_a_fresh_connection(store, db_path):
    saved = store.add("  The tests run with make test.  ", scope="project", source="cli", confidence=0.8,
                      project_root="/src/app")
    reopened = MemoryStore(open_database(db_path))
    try:
        memory = reopened.get(saved.id)
    finally:
        reopened.db.close()
    assert memory.content == "The tests run with make test."
    assert (memory.scope, memory.project_root, memory.conversation_id) == ("project", "/src/app", None)
    assert (memory.confidence, memory.source, memory.archived) == (0.8, "cli", False)
    assert memory.created_at == memory.updated_at and memory.vector is None


def test_each_place_sees_user_memories_its_projects_and_its_sessions_never_others(store):
    one, two = conversation(store.db, "one"), conversation(store.db, "two")
    user = store.add("prefers tabs", scope="user", source="user")
    app = store.add("app uses make", scope="project", source="cli", project_root="/src/app")
    lib = store.add("lib uses tox", scope="project", source="cli", project_root="/src/lib")
    in_one = store.add("debugging the login bug", scope="session", source="tool", conversation_id=one)

    def ids(root, conversation_id):
        return [m.id for m in store.visible_for(root, conversation_id)]

    assert ids("/src/app", one) == [user.id, app.id, in_one.id]
    assert ids("/src/app", two) == [user.id, app.id]
    assert ids("/src/lib", None) == [user.id, lib.id]
    assert ids("/elsewhere", None) == [user.id]


def test_a_user_memory_keeps_no_project_and_a_project_memory_no_session(store):
    sid = conversation(store.db)
    user = store.add("x", scope="user", source="cli", project_root="/src/app", conversation_id=sid)
    project = store.add("y", scope="project", source="cli", project_root="/src/app", conversation_id=sid)
    assert (user.project_root, user.conversation_id) == (None, None)
    assert (project.project_root, project.conversation_id) == ("/src/app", None)


def test_archived_memories_are_kept_but_not_visible_or_listed_by_default(store):
    kept = store.add("kept", scope="user", source="cli")
    gone = store.add("old", scope="user", source="cli")
    assert store.archive(gone.id).archived
    assert [m.id for m in store.visible_for(None, None)] == [kept.id]
    assert [m.id for m in store.list()] == [kept.id]
    assert [m.id for m in store.list(include_archived=True)] == [kept.id, gone.id]
    store.archive(gone.id, archived=False)
    assert [m.id for m in store.visible_for(None, None)] == [kept.id, gone.id]


def test_list_filters_by_scope_project_and_session(store):
    sid = conversation(store.db)
    store.add("u", scope="user", source="cli")
    p = store.add("p", scope="project", source="cli", project_root="/a")
    s = store.add("s", scope="session", source="cli", conversation_id=sid)
    assert [m.id for m in store.list(scope="project")] == [p.id]
    assert [m.id for m in store.list(project_root="/a")] == [p.id]
    assert [m.id for m in store.list(conversation_id=sid)] == [s.id]
    with pytest.raises(UsageError, match="'team' is not a memory scope"):
        store.list(scope="team")


def test_editing_the_content_drops_its_vector_but_a_confidence_change_keeps_it(store):
    memory = store.add("uses make", scope="user", source="cli")
    store.set_vector(memory.id, "test/model", b"\x00" * 8)
    assert store.get(memory.id).embedding_model == "test/model"
    store.update(memory.id, confidence=0.5)
    assert store.get(memory.id).vector == b"\x00" * 8
    edited = store.update(memory.id, content="uses just")
    assert (edited.content, edited.confidence, edited.vector, edited.embedding_model) == ("uses just", 0.5, None, None)
    assert edited.updated_at > memory.updated_at


def test_a_vector_made_from_old_content_is_not_stored_over_new_content(store):
    memory = store.add("uses make", scope="user", source="cli")
    store.update(memory.id, content="uses just")
    store.set_vectors("test/model", [(memory, b"\x01" * 8)])  # `memory` still holds the old text
    assert store.get(memory.id).vector is None


def test_forget_deletes_and_unknown_ids_are_one_clear_error(store):
    memory = store.add("secret plan", scope="user", source="cli")
    assert store.forget(memory.id).content == "secret plan"
    assert store.list(include_archived=True) == []
    for call in (store.get, store.forget, store.archive):
        with pytest.raises(NotFound, match=f"no memory with id {memory.id}"):
            call(memory.id)
    with pytest.raises(NotFound):
        store.update(memory.id, content="x")


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"content": "   "}, "needs some text"),
        ({"scope": "team"}, "'team' is not a memory scope"),
        ({"confidence": 1.5}, "between 0 and 1"),
        ({"confidence": -0.1}, "between 0 and 1"),
        ({"scope": "project"}, "needs a project root"),
        ({"scope": "session"}, "needs a session"),
    ],
)
def test_malformed_memories_are_refused_and_nothing_is_written(store, kwargs, message):
    arguments = {"content": "fact", "scope": "user", "source": "cli", **kwargs}
    content = arguments.pop("content")
    with pytest.raises(UsageError, match=message):
        store.add(content, **arguments)
    assert store.list(include_archived=True) == []


def test_deleting_a_session_deletes_its_session_memories(store):
    sid = conversation(store.db)
    store.add("only here", scope="session", source="tool", conversation_id=sid)
    user = store.add("everywhere", scope="user", source="cli")
    ConversationStore(store.db).delete_conversation(sid)
    assert [m.id for m in store.list(include_archived=True)] == [user.id]
