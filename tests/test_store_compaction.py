"""zeph_cli.store.compaction on real SQLite files: dual visibility, positions, pruning, metrics, migration."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest
from zeph_cli.store.sqlite import Database

from zeph_cli.errors import NotFound
from zeph_cli.messages import Message, TextPart, ToolCallPart, ToolResultPart
from zeph_cli.store import CompactionError, CompactionMetrics, CompactionStore, ConversationStore, open_database
from zeph_cli.store.migrations import migrate
from zeph_cli.store.transactions import write_transaction


@pytest.fixture
def db_path(tmp_path) -> Path:
    return tmp_path / "z.db"


@pytest.fixture
def stores(db_path):
    db = open_database(db_path)
    yield ConversationStore(db), CompactionStore(db)
    db.close()


def new_conversation(store: ConversationStore) -> int:
    return store.create_conversation(provider="anthropic", model="m", cwd="/w").id


def add_texts(store: ConversationStore, conversation_id: int, *texts: str) -> list[int]:
    """Alternate user / assistant text messages; return their ids."""
    ids = []
    for i, text in enumerate(texts):
        message = Message.user(text) if i % 2 == 0 else Message.assistant(text)
        ids.append(store.add_message(conversation_id, message).id)
    return ids


def add_tool_pair(store: ConversationStore, conversation_id: int, call_id: str, output: str) -> tuple[int, int]:
    call = Message("assistant", (ToolCallPart(call_id, "shell", {"command": "ls"}),))
    result = Message("tool", (ToolResultPart(call_id, output, name="shell"),))
    return store.add_message(conversation_id, call).id, store.add_message(conversation_id, result).id


def view(db: Database, conversation_id: int, flag: str) -> list[str]:
    """Contents of the rows with `flag` = 1, in history order (position, id)."""
    sql = f"select content from messages where conversation_id = ? and {flag} = 1 order by position, id"
    return [r["content"] for r in db.query(sql, [conversation_id])]


def flags(db: Database, message_id: int) -> tuple[int, int]:
    row = db.execute("select agent_visible, user_visible from messages where id = ?", [message_id]).fetchone()
    return row[0], row[1]


def row(db: Database, message_id: int) -> dict:
    return next(db.query("select * from messages where id = ?", [message_id]))


def snapshot(db: Database) -> list[dict]:
    return list(db.query("select * from messages order by id"))


def summary(text: str) -> Message:
    return Message.assistant(text)


def assert_search_index_intact(db: Database) -> None:
    db.execute("insert into messages_fts (messages_fts) values ('integrity-check')")  # raises when corrupt


# ---- Dual-Visibility Compaction ----------------------------------------------------------------


def test_flags_match_the_spec_table_normal_compacted_original_and_summary(stores):
    """Normal 1/1 (LLM context + UI), Compacted original 0/1 (UI only), Compaction summary 1/0 (LLM context only)."""
    conversations, compaction = stores
    cid = new_conversation(conversations)
    ids = add_texts(conversations, cid, "u1", "a1", "u2", "a2", "u3", "a3")

    stored = compaction.replace_with_summary(cid, ids[:4], summary("S: u1..a2"), metadata={"method": "llm"})

    db = compaction.db
    assert [flags(db, i) for i in ids[4:]] == [(1, 1), (1, 1)]  # normal
    assert [flags(db, i) for i in ids[:4]] == [(0, 1)] * 4  # compacted original
    assert flags(db, stored.id) == (1, 0)  # compaction summary
    assert all(row(db, i)["compacted_at"] for i in ids[:4])
    assert row(db, ids[4])["compacted_at"] is None and row(db, stored.id)["compacted_at"] is None
    assert stored.agent_visible and not stored.user_visible
    assert json.loads(row(db, stored.id)["metadata"]) == {
        "method": "llm",
        "summary_kind": "compaction",
        "summary_of": ids[:4],
    }
    assert view(db, cid, "agent_visible") == ["S: u1..a2", "u3", "a3"]
    assert view(db, cid, "user_visible") == ["u1", "a1", "u2", "a2", "u3", "a3"]
    # the user's scroll-back through the existing reader is untouched
    assert [m.message.content for m in conversations.history(cid, user_visible=True)] == ["u1", "a1", "u2", "a2", "u3", "a3"]
    assert conversations.get_conversation(cid).message_count == 6


def test_summary_sits_where_the_compacted_range_was(stores):
    conversations, compaction = stores
    cid = new_conversation(conversations)
    ids = add_texts(conversations, cid, "u1", "a1", "u2", "a2", "u3", "a3")

    stored = compaction.replace_with_summary(cid, [ids[3], ids[2]], summary("S: u2 a2"), token_count=7, token_counter="tiktoken")

    assert view(compaction.db, cid, "agent_visible") == ["u1", "a1", "S: u2 a2", "u3", "a3"]
    assert row(compaction.db, stored.id)["position"] == row(compaction.db, ids[2])["position"] == ids[2]
    assert (stored.token_count, stored.token_counter) == (7, "tiktoken")
    assert (row(compaction.db, stored.id)["token_count"], row(compaction.db, stored.id)["token_counter"]) == (7, "tiktoken")


def test_messages_added_after_a_summary_follow_it(stores):
    conversations, compaction = stores
    cid = new_conversation(conversations)
    ids = add_texts(conversations, cid, "u1", "a1", "u2", "a2")
    compaction.replace_with_summary(cid, ids[:2], summary("S"))
    new = conversations.add_message(cid, Message.user("u3"))

    assert row(compaction.db, new.id)["position"] == new.id  # every ordinary row gets position = id
    assert view(compaction.db, cid, "agent_visible") == ["S", "u2", "a2", "u3"]


def test_a_later_compaction_including_the_earlier_summary_hides_it_too(stores):
    conversations, compaction = stores
    cid = new_conversation(conversations)
    ids = add_texts(conversations, cid, "u1", "a1", "u2", "a2")
    first = compaction.replace_with_summary(cid, ids[:2], summary("S1"))
    more = add_texts(conversations, cid, "u3", "a3")

    second = compaction.replace_with_summary(cid, [first.id, ids[2], ids[3]], summary("S2"))

    db = compaction.db
    assert flags(db, first.id) == (0, 0)  # a hidden summary is nobody's any more
    assert row(db, first.id)["compacted_at"]
    assert flags(db, second.id) == (1, 0)
    assert row(db, second.id)["position"] == ids[0]  # where the very first compacted message stood
    assert view(db, cid, "agent_visible") == ["S2", "u3", "a3"]
    assert view(db, cid, "user_visible") == ["u1", "a1", "u2", "a2", "u3", "a3"]
    assert json.loads(row(db, second.id)["metadata"])["summary_of"] == [first.id, ids[2], ids[3]]
    assert more == [ids[3] + 2, ids[3] + 3]


# ---- atomicity ---------------------------------------------------------------------------------


def test_an_id_from_another_conversation_changes_nothing(stores):
    conversations, compaction = stores
    mine, other = new_conversation(conversations), new_conversation(conversations)
    ids = add_texts(conversations, mine, "u1", "a1", "u2")
    foreign = add_texts(conversations, other, "elsewhere")
    before = snapshot(compaction.db)

    with pytest.raises(CompactionError) as caught:
        compaction.replace_with_summary(mine, [ids[0], ids[1], foreign[0]], summary("S"))

    assert str(caught.value) == f"message {foreign[0]} is not agent-visible in session {mine}, so nothing was compacted"
    assert snapshot(compaction.db) == before
    assert not compaction.db.conn.in_transaction


def test_an_already_compacted_or_unknown_id_changes_nothing(stores):
    conversations, compaction = stores
    cid = new_conversation(conversations)
    ids = add_texts(conversations, cid, "u1", "a1", "u2", "a2")
    compaction.replace_with_summary(cid, ids[:2], summary("S"))
    before = snapshot(compaction.db)

    with pytest.raises(CompactionError, match=rf"messages {ids[1]}, 9999 are not agent-visible"):
        compaction.replace_with_summary(cid, [ids[2], ids[1], 9999], summary("again"))
    with pytest.raises(CompactionError, match="no messages of session"):
        compaction.replace_with_summary(cid, [], summary("empty"))

    assert snapshot(compaction.db) == before


def test_compaction_and_its_event_commit_or_roll_back_together(stores):
    conversations, compaction = stores
    cid = new_conversation(conversations)
    ids = add_texts(conversations, cid, "u1", "a1", "u2")
    before = snapshot(compaction.db)

    with pytest.raises(ValueError, match="unknown compaction kind 'huge'"):
        with write_transaction(compaction.db):
            compaction.replace_with_summary(cid, ids[:2], summary("S"))
            compaction.record_event(cid, "huge")

    assert snapshot(compaction.db) == before
    assert compaction.metrics(cid) == CompactionMetrics()


# ---- Tool-Pair Summarization -------------------------------------------------------------------


def test_tool_pair_visibility_after_summarization(stores):
    """Original tool request / response: false/true (UI only); [tool summary] message: true/false (LLM context only)."""
    conversations, compaction = stores
    cid = new_conversation(conversations)
    (first,) = add_texts(conversations, cid, "list files")
    call, response = add_tool_pair(conversations, cid, "call_1", "a.txt\nb.txt")
    (last,) = add_texts(conversations, cid, "done")  # even index: a user message

    stored = compaction.apply_tool_summary(cid, [call, response], summary("[tool summary] shell ls listed a.txt, b.txt"))

    db = compaction.db
    assert flags(db, call) == (0, 1) and flags(db, response) == (0, 1)
    assert flags(db, stored.id) == (1, 0)
    assert view(db, cid, "agent_visible") == ["list files", "[tool summary] shell ls listed a.txt, b.txt", "done"]
    assert json.loads(row(db, stored.id)["metadata"]) == {"summary_kind": "tool_pair", "summary_of": [call, response]}
    assert flags(db, first) == (1, 1) and flags(db, last) == (1, 1)


def test_tool_pair_with_two_results_is_one_pair(stores):
    conversations, compaction = stores
    cid = new_conversation(conversations)
    call = conversations.add_message(
        cid, Message("assistant", (TextPart("two"), ToolCallPart("c1", "read", {}), ToolCallPart("c2", "read", {})))
    ).id
    r1 = conversations.add_message(cid, Message("tool", (ToolResultPart("c1", "one"),))).id
    r2 = conversations.add_message(cid, Message("tool", (ToolResultPart("c2", "two"),))).id

    compaction.apply_tool_summary(cid, [r2, call, r1], summary("[tool summary] read twice"))

    assert view(compaction.db, cid, "agent_visible") == ["[tool summary] read twice"]


def test_an_incomplete_tool_pair_changes_nothing(stores):
    conversations, compaction = stores
    cid = new_conversation(conversations)
    call, response = add_tool_pair(conversations, cid, "call_1", "out")
    other_call, other_response = add_tool_pair(conversations, cid, "call_2", "out 2")
    (text,) = add_texts(conversations, cid, "plain")
    before = snapshot(compaction.db)

    for ids in ([call], [response], [call, other_response], [text, response], [call, response, other_call]):
        with pytest.raises(CompactionError, match="not one tool call with its results"):
            compaction.apply_tool_summary(cid, ids, summary("[tool summary] x"))

    assert snapshot(compaction.db) == before


def test_deferred_summary_is_merged_into_metadata(stores):
    conversations, compaction = stores
    cid = new_conversation(conversations)
    call = conversations.add_message(cid, Message("assistant", (ToolCallPart("c1", "shell", {}),))).id
    response = conversations.add_message(
        cid, Message("tool", (ToolResultPart("c1", "ok"),)), metadata={"tool_output_id": "t-1"}
    ).id

    compaction.set_deferred_summary(response, "Ran shell; it printed ok.")
    compaction.set_deferred_summary(response, "Ran shell: ok.")

    assert json.loads(row(compaction.db, response)["metadata"]) == {
        "tool_output_id": "t-1",
        "deferred_summary": "Ran shell: ok.",
    }
    assert flags(compaction.db, call) == (1, 1) and flags(compaction.db, response) == (1, 1)  # originals stay visible
    with pytest.raises(NotFound, match="no message with id 4242"):
        compaction.set_deferred_summary(4242, "x")


# ---- Hard Tier: pruning persisted --------------------------------------------------------------


PLACEHOLDER = "[tool output pruned]"


def pruned(call_id: str) -> Message:
    return Message("tool", (ToolResultPart(call_id, PLACEHOLDER, name="shell"),))


def test_pruning_keeps_the_users_original_and_gives_the_agent_the_placeholder(stores):
    conversations, compaction = stores
    cid = new_conversation(conversations)
    (ask,) = add_texts(conversations, cid, "build it")
    call, response = add_tool_pair(conversations, cid, "call_1", "x" * 5000)
    (after,) = add_texts(conversations, cid, "next")

    (copy,) = compaction.prune_tool_outputs(
        cid, {response: pruned("call_1")}, token_counts={response: 5}, token_counter="tiktoken"
    )

    db = compaction.db
    assert view(db, cid, "agent_visible") == ["build it", "", PLACEHOLDER, "next"]
    assert view(db, cid, "user_visible") == ["build it", "", "x" * 5000, "next"]
    original, stored_copy = row(db, response), row(db, copy.id)
    assert (original["agent_visible"], original["user_visible"]) == (0, 1)
    assert (stored_copy["agent_visible"], stored_copy["user_visible"]) == (1, 0)
    assert original["compacted_at"] and stored_copy["compacted_at"]
    assert json.loads(stored_copy["metadata"]) == {"pruned": True, "pruned_from": response}
    assert json.loads(original["metadata"]) == {"pruned_into": copy.id}
    assert stored_copy["position"] == original["position"] == response
    assert (stored_copy["token_count"], stored_copy["token_counter"]) == (5, "tiktoken")
    assert copy.message.tool_results[0].content == PLACEHOLDER
    assert flags(db, call) == (1, 1) and flags(db, ask) == (1, 1) and flags(db, after) == (1, 1)
    # search reads what the user sees: the original body, never the placeholder
    assert [h.message_id for h in conversations.search("pruned")] == []
    assert [h.message_id for h in conversations.search("next")] == [after]
    assert_search_index_intact(db)


def test_nothing_is_pruned_twice(stores):
    conversations, compaction = stores
    cid = new_conversation(conversations)
    _, response = add_tool_pair(conversations, cid, "call_1", "long output")
    (copy,) = compaction.prune_tool_outputs(cid, {response: pruned("call_1")})
    before = snapshot(compaction.db)

    assert compaction.prune_tool_outputs(cid, {response: pruned("call_1"), copy.id: pruned("call_1")}) == []
    assert compaction.prune_tool_outputs(cid, {}) == []

    assert snapshot(compaction.db) == before


def test_a_bad_prune_changes_nothing(stores):
    conversations, compaction = stores
    cid, other = new_conversation(conversations), new_conversation(conversations)
    (text,) = add_texts(conversations, cid, "not a tool message")
    _, response = add_tool_pair(conversations, cid, "call_1", "output")
    _, foreign = add_tool_pair(conversations, other, "call_9", "elsewhere")
    before = snapshot(compaction.db)

    with pytest.raises(CompactionError, match=rf"message {foreign} is not in session {cid}"):
        compaction.prune_tool_outputs(cid, {response: pruned("call_1"), foreign: pruned("call_9")})
    with pytest.raises(CompactionError, match=rf"message {text} is not an agent-visible tool message"):
        compaction.prune_tool_outputs(cid, {response: pruned("call_1"), text: pruned("call_1")})
    with pytest.raises(CompactionError, match=rf"copy of message {response} does not answer the same tool calls"):
        compaction.prune_tool_outputs(cid, {response: pruned("call_2")})

    assert snapshot(compaction.db) == before


def test_a_pruned_pair_can_still_be_compacted_and_the_user_keeps_the_original(stores):
    conversations, compaction = stores
    cid = new_conversation(conversations)
    call, response = add_tool_pair(conversations, cid, "call_1", "full output")
    (tail,) = add_texts(conversations, cid, "tail")
    (copy,) = compaction.prune_tool_outputs(cid, {response: pruned("call_1")})

    compaction.apply_tool_summary(cid, [call, copy.id], summary("[tool summary] shell ran"))

    assert view(compaction.db, cid, "agent_visible") == ["[tool summary] shell ran", "tail"]
    assert view(compaction.db, cid, "user_visible") == ["", "full output", "tail"]
    assert flags(compaction.db, tail) == (1, 1)


# ---- metrics -----------------------------------------------------------------------------------


def test_metrics_aggregate_per_conversation(stores):
    conversations, compaction = stores
    cid, other = new_conversation(conversations), new_conversation(conversations)
    compaction.record_event(cid, "soft", tokens_before=9000, tokens_after=7000, outputs_pruned=3, method="prune-only")
    compaction.record_event(
        cid, "hard", tokens_before=9500, tokens_after=3000, messages_compacted=12, method="chunked",
        probe_verdict="Pass", probe_score=0.8,
    )
    compaction.record_event(
        cid, "hard", tokens_before=9500, tokens_after=9500, method="llm", probe_verdict="HardFail", probe_score=0.2
    )
    compaction.record_event(
        cid, "proactive", tokens_before=82000, tokens_after=4000, messages_compacted=40, method="llm",
        probe_verdict="soft_fail", probe_score=0.5,
    )
    compaction.record_event(cid, "tool_pair", tokens_before=100, tokens_after=40, messages_compacted=2, method="llm")
    compaction.record_event(cid, "manual", tokens_before=5000, tokens_after=1000, method="single", probe_verdict="error")
    compaction.record_event(other, "hard", tokens_before=10, tokens_after=1, probe_verdict="pass", probe_score=1.0)

    assert compaction.metrics(cid) == CompactionMetrics(
        compaction_events=5,  # the HardFail one blocked compaction
        compaction_tokens_saved=2000 + 6500 + 78000 + 60 + 4000,
        compression_events=1,
        compression_tokens_saved=78000,
        tool_output_prunes=3,
        compaction_probe_passes=1,
        compaction_probe_soft_failures=1,
        compaction_probe_failures=1,
        compaction_probe_errors=1,
        last_probe_verdict="error",
        last_probe_score=None,
    )
    assert compaction.metrics(other).last_probe_verdict == "pass"
    assert compaction.metrics(new_conversation(conversations)) == CompactionMetrics()


def test_unknown_verdict_is_refused(stores):
    conversations, compaction = stores
    cid = new_conversation(conversations)
    with pytest.raises(ValueError, match="unknown probe verdict 'meh'"):
        compaction.record_event(cid, "hard", probe_verdict="meh")
    assert compaction.metrics(cid) == CompactionMetrics()


def test_deleting_a_conversation_takes_its_events_and_summaries(stores):
    conversations, compaction = stores
    cid = new_conversation(conversations)
    ids = add_texts(conversations, cid, "u1", "a1", "u2")
    compaction.replace_with_summary(cid, ids[:2], summary("S"))
    compaction.record_event(cid, "hard", tokens_before=10, tokens_after=2)

    assert conversations.delete_conversation(cid) == 4

    assert compaction.db.execute("select count(*) from compaction_events").fetchone()[0] == 0
    assert compaction.db.execute("select count(*) from messages").fetchone()[0] == 0


# ---- migration -----------------------------------------------------------------------------------


def test_a_database_at_m005_gets_positions_backfilled(db_path):
    old = Database(sqlite3.connect(db_path))
    assert migrate(old, upto="m005_tool_runs_and_outputs")[-1] == "m005_tool_runs_and_outputs"
    assert "position" not in old["messages"].columns_dict
    old["conversations"].insert(
        {"id": 3, "title": "before", "created_at": "t", "updated_at": "t", "provider": "p", "model": "m", "cwd": "/"}
    )
    old["messages"].insert_all(
        [
            {"id": 10, "conversation_id": 3, "role": "user", "content": "old question", "created_at": "t", "parts": None},
            {"id": 11, "conversation_id": 3, "role": "assistant", "content": "old answer", "created_at": "t", "parts": None},
            {"id": 12, "conversation_id": 3, "role": "user", "content": "old follow-up", "created_at": "t", "parts": None},
        ]
    )
    old.close()

    db = open_database(db_path)
    try:
        assert db["messages"].columns_dict["position"] is float
        assert [(r["id"], r["position"]) for r in db.query("select id, position from messages order by id")] == [
            (10, 10.0),
            (11, 11.0),
            (12, 12.0),
        ]
        assert any(ix.columns == ["conversation_id", "agent_visible", "position"] for ix in db["messages"].indexes)
        assert "compaction_events" in db.table_names()

        stored = CompactionStore(db).replace_with_summary(3, [10, 11], summary("S: old"))
        new = ConversationStore(db).add_message(3, Message.user("new question"))
        assert view(db, 3, "agent_visible") == ["S: old", "old follow-up", "new question"]
        assert row(db, stored.id)["position"] == 10 and row(db, new.id)["position"] == new.id
        assert [h.message_id for h in ConversationStore(db).search("question")] in ([10, new.id], [new.id, 10])
        assert_search_index_intact(db)
    finally:
        db.close()
