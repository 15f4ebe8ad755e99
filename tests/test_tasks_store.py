"""The task list and its subgoal registry on real SQLite files: replacing the list, the spans its items'
progress records, the states the registry gives them, and the list going with its session."""

from __future__ import annotations

from pathlib import Path

import pytest

from zeph_cli.context.compaction.subgoals import ABANDONED, ACTIVE, COMPLETED, Subgoal
from zeph_cli.features.tasks.items import TaskItem
from zeph_cli.features.tasks.registry import subgoals, task_items
from zeph_cli.features.tasks.store import TaskStore
from zeph_cli.messages import Message
from zeph_cli.store import ConversationStore, open_database


@pytest.fixture
def db_path(tmp_path: Path) -> Path:
    return tmp_path / "zeph.db"


@pytest.fixture
def conversations(db_path: Path):
    db = open_database(db_path)
    yield ConversationStore(db)
    db.close()


def new_session(conversations: ConversationStore) -> int:
    return conversations.create_conversation(provider="p", model="m", cwd="/", title="s").id


def say(conversations: ConversationStore, sid: int, role: str = "assistant") -> int:
    return conversations.add_message(sid, Message.text(role, f"{role} says")).id


def write(conversations: ConversationStore, sid: int, *items: tuple[str, str, str]) -> None:
    """todo_write as the tool records it: opened at the newest assistant message, closed at the newest one."""
    store = TaskStore(conversations.db)
    opened = store.newest_message_id(sid, "assistant") or 0
    closed = store.newest_message_id(sid) or 0
    store.replace(sid, [TaskItem(*item) for item in items], opened_at=opened, closed_at=closed)


def test_the_list_is_replaced_whole_and_read_back_in_order_from_a_fresh_connection(conversations, db_path):
    sid = new_session(conversations)
    say(conversations, sid)
    write(conversations, sid, ("a", "read the code", "completed"), ("b", "fix the bug", "pending"))
    write(conversations, sid, ("b", "fix the bug", "in_progress"), ("c", "run the tests", "pending"))
    reopened = open_database(db_path)
    try:
        assert task_items(reopened, sid) == [TaskItem("b", "fix the bug", "in_progress"),
                                             TaskItem("c", "run the tests", "pending")]
    finally:
        reopened.close()
    assert task_items(conversations.db, new_session(conversations)) == []


def test_spans_open_at_the_calling_message_and_close_at_the_newest_and_take_the_item_state(conversations):
    sid = new_session(conversations)
    say(conversations, sid, "user")
    first_call = say(conversations, sid)  # the reply that calls todo_write
    write(conversations, sid, ("1", "read", "in_progress"), ("2", "edit", "pending"))
    assert subgoals(conversations.db, sid) == [Subgoal("1", "read", ACTIVE, first_call, None)]
    say(conversations, sid, "tool")
    second_call = say(conversations, sid)
    say(conversations, sid, "tool")  # another call's result in the same round, stored before todo_write ran
    newest = conversations.history(sid)[-1].id
    write(conversations, sid, ("1", "read", "completed"), ("2", "edit", "in_progress"))
    assert subgoals(conversations.db, sid) == [
        Subgoal("1", "read", COMPLETED, first_call, newest),
        Subgoal("2", "edit", ACTIVE, second_call, None),
    ]


def test_an_item_resumed_with_the_same_text_keeps_its_earlier_spans_in_its_state(conversations):
    sid = new_session(conversations)
    one = say(conversations, sid)
    write(conversations, sid, ("1", "build", "in_progress"))
    two = say(conversations, sid)
    write(conversations, sid, ("1", "build", "pending"))
    assert subgoals(conversations.db, sid) == []  # back to pending: ordinary history
    three = say(conversations, sid)
    write(conversations, sid, ("1", "build", "in_progress"))  # the same item again: the work goes on
    assert subgoals(conversations.db, sid) == [
        Subgoal("1", "build", ACTIVE, one, two),
        Subgoal("1", "build", ACTIVE, three, None),
    ]
    write(conversations, sid, ("1", "build", "in_progress"))  # still in progress: nothing new opens
    assert len(subgoals(conversations.db, sid)) == 2
    write(conversations, sid, ("1", "build", "completed"))
    assert [(g.state, g.last_id) for g in subgoals(conversations.db, sid)] == [(COMPLETED, two), (COMPLETED, three)]


def test_a_span_closed_as_pending_gives_no_subgoal_unless_its_item_resumes_with_the_same_text(conversations):
    sid = new_session(conversations)
    one = say(conversations, sid)
    write(conversations, sid, ("1", "build", "in_progress"), ("2", "test", "in_progress"))
    two = say(conversations, sid)
    write(conversations, sid, ("1", "build", "pending"), ("2", "test", "pending"))
    three = say(conversations, sid)
    write(conversations, sid, ("1", "write the docs", "in_progress"))  # id 1 reused, 2 dropped while pending
    assert subgoals(conversations.db, sid) == [Subgoal("1", "write the docs", ACTIVE, three, None)]
    write(conversations, sid, ("1", "write the docs", "completed"))
    assert subgoals(conversations.db, sid) == [Subgoal("1", "write the docs", COMPLETED, three, three)]
    assert one < two < three


def test_an_item_reworded_while_in_progress_keeps_one_span_with_its_latest_text(conversations):
    sid = new_session(conversations)
    one = say(conversations, sid)
    write(conversations, sid, ("1", "fix it", "in_progress"))
    say(conversations, sid)
    write(conversations, sid, ("1", "fix the parser", "in_progress"))
    assert subgoals(conversations.db, sid) == [Subgoal("1", "fix the parser", ACTIVE, one, None)]
    last = say(conversations, sid)
    write(conversations, sid, ("1", "fix the parser's errors", "completed"))  # closes with the text it has then
    assert subgoals(conversations.db, sid) == [Subgoal("1", "fix the parser's errors", COMPLETED, one, last)]


def test_a_reused_id_leaves_the_earlier_items_span_as_it_closed(conversations):
    sid = new_session(conversations)
    one = say(conversations, sid)
    write(conversations, sid, ("1", "refactor parser", "in_progress"))
    two = say(conversations, sid)
    write(conversations, sid, ("1", "refactor parser", "completed"))
    three = say(conversations, sid)
    write(conversations, sid, ("1", "write docs", "in_progress"))  # a new list, numbered from 1 again
    assert subgoals(conversations.db, sid) == [
        Subgoal("1", "refactor parser", COMPLETED, one, two),
        Subgoal("1", "write docs", ACTIVE, three, None),
    ]
    four = say(conversations, sid)
    write(conversations, sid, ("1", "write docs", "pending"))  # the new item paused: only its own span goes
    assert subgoals(conversations.db, sid) == [Subgoal("1", "refactor parser", COMPLETED, one, two)]
    write(conversations, sid, ("1", "write docs", "in_progress"))
    write(conversations, sid, ("1", "write docs", "abandoned"))
    assert [(g.text, g.state, g.last_id) for g in subgoals(conversations.db, sid)] == [
        ("refactor parser", COMPLETED, two), ("write docs", ABANDONED, four), ("write docs", ABANDONED, four)]


def test_an_item_completed_and_then_left_off_the_list_stays_completed(conversations):
    sid = new_session(conversations)
    one = say(conversations, sid)
    write(conversations, sid, ("1", "read", "in_progress"), ("2", "edit", "pending"))
    two = say(conversations, sid)
    write(conversations, sid, ("1", "read", "completed"), ("2", "edit", "in_progress"))
    three = say(conversations, sid)
    write(conversations, sid, ("2", "edit", "in_progress"), ("3", "test", "pending"))  # 1 dropped, done
    assert subgoals(conversations.db, sid) == [
        Subgoal("1", "read", COMPLETED, one, two),
        Subgoal("2", "edit", ACTIVE, two, None),
    ]
    write(conversations, sid)  # an empty list: 2 was in progress, so abandoned; 1 is still done
    assert subgoals(conversations.db, sid) == [
        Subgoal("1", "read", COMPLETED, one, two),
        Subgoal("2", "edit", ABANDONED, two, three),
    ]


def test_abandoned_and_removed_items_give_abandoned_subgoals(conversations):
    sid = new_session(conversations)
    call = say(conversations, sid)
    write(conversations, sid, ("x", "try A", "in_progress"), ("y", "try B", "in_progress"))
    later = say(conversations, sid)
    write(conversations, sid, ("x", "try A", "abandoned"))  # y dropped from the list while in progress
    assert subgoals(conversations.db, sid) == [
        Subgoal("x", "try A", ABANDONED, call, later),
        Subgoal("y", "try B", ABANDONED, call, later),
    ]
    write(conversations, sid)  # an empty list: everything that was recorded is abandoned
    assert [g.state for g in subgoals(conversations.db, sid)] == [ABANDONED, ABANDONED]
    assert task_items(conversations.db, sid) == []


def test_the_list_and_its_spans_go_with_their_session(conversations):
    sid, other = new_session(conversations), new_session(conversations)
    say(conversations, sid)
    say(conversations, other)
    write(conversations, sid, ("1", "mine", "in_progress"))
    write(conversations, other, ("1", "theirs", "in_progress"))
    conversations.delete_conversation(sid)
    assert task_items(conversations.db, sid) == [] and subgoals(conversations.db, sid) == []
    assert [g.text for g in subgoals(conversations.db, other)] == ["theirs"]
