"""The agent's history read costs what the agent sees, not what is stored.

A compacted session keeps every original ("Compacted original: agent_visible
0, user_visible 1, UI only") next to its summary ("Compaction summary:
agent_visible 1, user_visible 0, LLM context only"); the agent-visible read must
reach only the visible rows through an index, in order, without a sort step,
and rows read on an earlier turn are not parsed again.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from zeph_cli.messages import Message, ToolCallPart, ToolResultPart
from zeph_cli.store import CompactionStore, ConversationStore, open_database

VISIBILITY_INDEX = "idx_messages_conversation_id_agent_visible_position"


@pytest.fixture
def store(tmp_path: Path):
    s = ConversationStore(open_database(tmp_path / "data" / "zeph.db"))
    yield s
    s.close()


def add_turns(store: ConversationStore, conversation_id: int, turns: int, start: int = 0) -> list[int]:
    ids = []
    for n in range(start, start + turns):
        call = ToolCallPart(f"toolu_{n:04d}", "read_file", {"path": f"src/mod_{n}.py"})
        for message in (
            Message.user(f"question {n}"),
            Message("assistant", (call,)),
            Message("tool", (ToolResultPart(call.id, f"contents of mod_{n}\n" * 20, name="read_file"),)),
            Message.assistant(f"answer {n}"),
        ):
            ids.append(store.add_message(conversation_id, message, token_count=10, token_counter="cl100k_base").id)
    return ids


def compact_all_but_tail(store: ConversationStore, conversation_id: int, summary: str, tail: int = 4) -> None:
    """What a hard compaction does: everything visible before the tail, the earlier
    summary included, becomes one summary."""
    visible = store.history(conversation_id, agent_visible=True)
    CompactionStore(store.db).replace_with_summary(
        conversation_id,
        [row.id for row in visible[:-tail]],
        Message.context(summary),
        metadata={"compaction_summary": True},
    )


@pytest.fixture
def compacted(store):
    """A session compacted twice, beside a second session, so most stored rows are invisible to the agent."""
    other = store.create_conversation(provider="p", model="m", cwd="/w")
    add_turns(store, other.id, 30)
    conversation = store.create_conversation(provider="p", model="m", cwd="/w")
    add_turns(store, conversation.id, 40)
    compact_all_but_tail(store, conversation.id, "[compaction summary] first")
    add_turns(store, conversation.id, 40, start=40)
    compact_all_but_tail(store, conversation.id, "[compaction summary] second, carrying the first forward")
    add_turns(store, conversation.id, 2, start=80)
    return conversation


def history_plan(store: ConversationStore, conversation_id: int, **visibility: bool) -> str:
    """SQLite's plan for the very statement `history` runs."""
    statements: list[str] = []
    store.db.conn.set_trace_callback(statements.append)
    try:
        store.history(conversation_id, **visibility)
    finally:
        store.db.conn.set_trace_callback(None)
    [query] = [s for s in statements if s.lstrip().lower().startswith("select")]
    return "; ".join(row[-1] for row in store.db.execute("explain query plan " + query))


def test_compacted_session_shows_the_agent_only_the_last_summary_and_the_tail(store, compacted):
    visible = store.history(compacted.id, agent_visible=True)
    assert [row.message.content for row in visible] == [
        "[compaction summary] second, carrying the first forward",
        "question 79", "", "contents of mod_79\n" * 20, "answer 79",
        "question 80", "", "contents of mod_80\n" * 20, "answer 80",
        "question 81", "", "contents of mod_81\n" * 20, "answer 81",
    ]  # fmt: skip
    assert len(store.history(compacted.id, user_visible=True)) == 82 * 4


def test_agent_visible_read_seeks_the_visibility_index_without_a_sort(store, compacted):
    plan = history_plan(store, compacted.id, agent_visible=True)
    assert f"SEARCH messages USING INDEX {VISIBILITY_INDEX} (conversation_id=? AND agent_visible=?)" in plan
    assert "SCAN" not in plan and "TEMP B-TREE" not in plan


def test_agent_visible_read_keeps_its_index_once_sqlite_has_statistics(store, compacted):
    store.db.execute("ANALYZE")
    plan = history_plan(store, compacted.id, agent_visible=True)
    assert f"USING INDEX {VISIBILITY_INDEX} (conversation_id=? AND agent_visible=?)" in plan
    assert "SCAN" not in plan and "TEMP B-TREE" not in plan


def test_rows_read_on_an_earlier_turn_are_not_parsed_again(store, compacted):
    first = store.history(compacted.id, agent_visible=True)
    add_turns(store, compacted.id, 1, start=82)
    second = store.history(compacted.id, agent_visible=True)
    assert all(again.message is before.message for before, again in zip(first, second))
    assert [row.message.content for row in second[len(first):]] == [
        "question 82", "", "contents of mod_82\n" * 20, "answer 82"
    ]


def test_a_row_id_reused_by_another_process_is_read_afresh(store, tmp_path):
    old = store.create_conversation(provider="p", model="m", cwd="/w")
    old_id = store.add_message(old.id, Message.user("the old question")).id
    assert store.history(old.id, agent_visible=True)[0].message.content == "the old question"
    other = ConversationStore(open_database(tmp_path / "data" / "zeph.db"))
    try:
        other.delete_conversation(old.id)
        new = other.create_conversation(provider="p", model="m", cwd="/w")
        new_id = other.add_message(new.id, Message.user("a different question")).id
    finally:
        other.close()
    assert (new.id, new_id) == (old.id, old_id)  # SQLite hands the freed rowids out again
    assert [row.message.content for row in store.history(new.id, agent_visible=True)] == ["a different question"]

