"""todo_write through a real agent against the OpenAI wire fake, on a real SQLite file: the list it keeps,
the errors that name the culprit, the spans its calls record, the modes that offer it, and the <todo>
block the next request carries."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from zeph_cli.agent import Agent, ToolCallFinished
from zeph_cli.config import load_config
from zeph_cli.context.compaction.subgoals import ACTIVE, COMPLETED, Subgoal
from zeph_cli.features.tasks.items import TaskItem, checked_items, BadTaskList
from zeph_cli.features.tasks.registry import subgoals, task_items
from zeph_cli.features.tasks.store import TaskStore
from zeph_cli.messages import Message
from zeph_cli.paths import database_path
from zeph_cli.providers import create_provider, resolve_settings
from zeph_cli.store import ConversationStore, open_database
from tests.agent_helpers import AGENTS, close_agents  # noqa: F401  (autouse fixture)
from tests.fakes import openai_wire

PATH = "/v1/chat/completions"


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    root = tmp_path / "ws"
    root.mkdir()
    (root / "notes.txt").write_text("the answer is 42\n", encoding="utf-8")
    return root


def make_agent(fake_server, workspace: Path, mode: str | None = None, **env: str) -> Agent:
    environ = {"ZEPH_LLM_MAX_RETRIES": "0", "ZEPH_LLM_PROVIDER": "compatible", "ZEPH_LLM_BASE_URL": fake_server.url + "/v1",
               "ZEPH_LLM_MODEL": "gpt-4o", **env}
    config = load_config(env=environ).config
    agent = Agent(config=config, store=ConversationStore(open_database(database_path())),
                  provider=create_provider(resolve_settings(config, environ)), cwd=workspace, mode=mode)
    AGENTS.append(agent)
    return agent


def calls(fake_server, *batch: tuple[str, str, dict]) -> None:
    fake_server.queue(openai_wire.stream_response(
        openai_wire.tool_call_chunks([(cid, name, [json.dumps(args)]) for cid, name, args in batch])), path=PATH)


def reply(fake_server, text: str) -> None:
    fake_server.queue(openai_wire.stream_response(openai_wire.text_chunks([text])), path=PATH)


def todo(call_id: str, *items: tuple[str, str, str]) -> tuple[str, str, dict]:
    return (call_id, "todo_write", {"items": [{"id": i, "text": t, "status": s} for i, t, s in items]})


async def run(agent: Agent, conversation, prompt: str) -> list:
    return [event async for event in agent.run_turn(conversation, prompt)]


def context_messages(body: dict) -> list[str]:
    return [m["content"] for m in body["messages"] if isinstance(m.get("content"), str) and "<todo>" in m["content"]]


async def test_the_list_is_kept_and_the_next_request_carries_it_just_before_the_turn(fake_server, workspace):
    calls(fake_server, todo("call_t1", ("1", "read notes.txt", "in_progress"), ("2", "answer", "pending")))
    reply(fake_server, "Reading it now.")
    agent = make_agent(fake_server, workspace)
    conversation = agent.new_conversation("read notes then answer")
    events = await run(agent, conversation, "read notes then answer")
    finished, = [e for e in events if isinstance(e, ToolCallFinished)]
    assert not finished.result.is_error and finished.summary == "2 items, 1 in progress"
    assert "[>] 1. read notes.txt\n[ ] 2. answer" in finished.result.content
    assert task_items(agent.store.db, conversation.id) == [TaskItem("1", "read notes.txt", "in_progress"),
                                                           TaskItem("2", "answer", "pending")]
    first, second = fake_server.requests_to(PATH)
    assert context_messages(first.json) == []  # no list yet: no block
    todo_block, = context_messages(second.json)
    assert "[>] 1. read notes.txt" in todo_block and "[ ] 2. answer" in todo_block
    sent = second.json["messages"]
    at = next(n for n, m in enumerate(sent) if m.get("content") == todo_block)
    assert sent[at + 1] == {"role": "user", "content": "read notes then answer"}  # just before the turn's message
    assert agent.context_for(conversation)[1].block("todo").detail == "2 items, 1 in progress"


async def test_a_bad_list_is_refused_naming_the_culprit_and_the_stored_list_stays(fake_server, workspace):
    calls(fake_server, todo("call_a", ("1", "first", "in_progress")))
    calls(fake_server, todo("call_b", ("1", "first", "completed"), ("1", "again", "pending")))
    calls(fake_server, todo("call_c", ("1", "first", "done")))
    calls(fake_server, todo("call_d", ("1", "  ", "pending")))
    reply(fake_server, "ok")
    agent = make_agent(fake_server, workspace)
    conversation = agent.new_conversation("work")
    events = await run(agent, conversation, "work")
    results = [e.result for e in events if isinstance(e, ToolCallFinished)]
    assert [r.is_error for r in results] == [False, True, True, True]
    assert "item '1' appears twice" in results[1].content and "unchanged" in results[1].content
    assert "item '1' has status 'done'; use one of pending, in_progress, completed, abandoned" in results[2].content
    assert "item '1' has no text" in results[3].content
    assert task_items(agent.store.db, conversation.id) == [TaskItem("1", "first", "in_progress")]


def test_the_checks_name_each_culprit():
    with pytest.raises(BadTaskList, match="item 2 has no id"):
        checked_items([{"id": "a", "text": "x", "status": "pending"}, {"text": "y", "status": "pending"}])
    with pytest.raises(BadTaskList, match="must be a list"):
        checked_items("1. do it")
    with pytest.raises(BadTaskList, match="item 1 must be an object"):
        checked_items(["do it"])
    assert checked_items([{"id": 3, "text": " spaced   out ", "status": "completed"}]) == [
        TaskItem("3", "spaced out", "completed")]


async def test_spans_follow_the_calls_across_turns(fake_server, workspace):
    calls(fake_server, ("call_r", "read_file", {"path": "notes.txt"}),
          todo("call_1", ("1", "read", "in_progress"), ("2", "write", "pending")))
    reply(fake_server, "read it")
    calls(fake_server, todo("call_2", ("1", "read", "completed"), ("2", "write", "in_progress")))
    reply(fake_server, "writing")
    agent = make_agent(fake_server, workspace)
    conversation = agent.new_conversation("go")
    await run(agent, conversation, "go")
    history = agent.store.history(conversation.id)
    first_call = next(m.id for m in history if m.role == "assistant")  # the reply that called both tools
    assert subgoals(agent.store.db, conversation.id) == [Subgoal("1", "read", ACTIVE, first_call, None)]
    await run(agent, conversation, "go on")
    history = agent.store.history(conversation.id)
    second_call = [m.id for m in history if m.role == "assistant" and m.message.tool_calls][-1]
    assert subgoals(agent.store.db, conversation.id) == [
        Subgoal("1", "read", COMPLETED, first_call, second_call),
        Subgoal("2", "write", ACTIVE, second_call, None),
    ]


async def test_a_new_list_reusing_an_id_leaves_the_finished_range_completed(fake_server, workspace):
    calls(fake_server, todo("call_1", ("1", "refactor parser", "in_progress")))
    calls(fake_server, todo("call_2", ("1", "refactor parser", "completed")))
    reply(fake_server, "refactored")
    calls(fake_server, todo("call_3", ("1", "write docs", "in_progress"), ("2", "review", "pending")))
    reply(fake_server, "writing")
    agent = make_agent(fake_server, workspace)
    conversation = agent.new_conversation("go")
    await run(agent, conversation, "refactor the parser")
    await run(agent, conversation, "now the docs")
    history = agent.store.history(conversation.id)
    call_ids = [m.id for m in history if m.role == "assistant" and m.message.tool_calls]
    assert subgoals(agent.store.db, conversation.id) == [
        Subgoal("1", "refactor parser", COMPLETED, call_ids[0], call_ids[1]),
        Subgoal("1", "write docs", ACTIVE, call_ids[2], None),
    ]


@pytest.mark.parametrize(("mode", "offered"), [("agent", True), ("plan", True), ("ask", False)])
async def test_agent_and_plan_modes_offer_it_and_ask_does_not(fake_server, workspace, mode, offered):
    agent = make_agent(fake_server, workspace, mode=mode)
    assert ("todo_write" in agent.offered_tools().names()) is offered


async def test_switched_off_there_is_no_tool_and_no_block(fake_server, workspace):
    agent = make_agent(fake_server, workspace, ZEPH_TASKS_ENABLED="false")
    await agent.start()
    conversation = agent.new_conversation("x")
    message = agent.store.add_message(conversation.id, Message.text("assistant", "planning"))
    TaskStore(agent.store.db).replace(conversation.id, [TaskItem("1", "kept", "pending")], opened_at=message.id,
                                      closed_at=message.id)
    assert "todo_write" not in agent.offered_tools().names()
    assert agent.context_for(conversation)[1].block("todo") is None
    on = make_agent(fake_server, workspace)
    await on.start()
    assert on.context_for(conversation)[1].block("todo") is not None  # the same stored list, switched on
