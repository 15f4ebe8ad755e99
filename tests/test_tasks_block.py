"""The <todo> block: present only with a list, within its own share of the budget, shrinking by leaving
completed items out first, then cutting; and through a real agent at an 8k budget."""

from __future__ import annotations

from pathlib import Path

import pytest

from zeph_cli.agent import Agent
from zeph_cli.config import load_config
from zeph_cli.context.blocks import TURN_ORDER, Placement, Room
from zeph_cli.features.tasks.blocks import TODO_SHARE, todo_block
from zeph_cli.features.tasks.items import TaskItem
from zeph_cli.features.tasks.store import TaskStore
from zeph_cli.messages import Message
from zeph_cli.paths import database_path
from zeph_cli.providers import create_provider, resolve_settings
from zeph_cli.store import ConversationStore, open_database
from zeph_cli.tokens import MESSAGE_OVERHEAD
from tests.agent_helpers import AGENTS, close_agents  # noqa: F401  (autouse fixture)


def measure(text: str) -> int:
    return MESSAGE_OVERHEAD + len(text) // 4 + 1


def room(allowance: int) -> Room:
    return Room(allowance, None, measure)


ITEMS = (
    TaskItem("1", "read the failing test and the code it covers", "completed"),
    TaskItem("2", "find where the cache key is built", "completed"),
    TaskItem("3", "fix the key so it includes the locale", "in_progress"),
    TaskItem("4", "add a test for two locales", "pending"),
    TaskItem("5", "try the old workaround", "abandoned"),
)


def test_no_block_without_a_list_and_a_per_turn_block_after_every_other_with_one():
    assert todo_block([]) is None
    block = todo_block(ITEMS)
    assert block is not None and block.placement is Placement.BEFORE_TURN and not block.stable
    assert block.order == TURN_ORDER["todo"] == max(TURN_ORDER.values())
    assert block.share == TODO_SHARE and 0 < TODO_SHARE <= 0.05


def test_the_whole_list_when_it_fits():
    fitted = todo_block(ITEMS).content.fit(room(1000))
    assert fitted.text.startswith("<todo>\n") and fitted.text.endswith("\n</todo>")
    assert "[x] 1. read the failing test" in fitted.text and "[>] 3. fix the key" in fitted.text
    assert "[-] 5. try the old workaround" in fitted.text
    assert fitted.detail == "5 items, 1 in progress, 2 completed, 1 abandoned"
    assert fitted.kept == ("1", "2", "3", "4", "5")


def test_completed_items_are_left_out_first_oldest_first():
    whole = measure(todo_block(ITEMS).content.fit(room(1000)).text)
    fitted = todo_block(ITEMS).content.fit(room(whole - 5))
    assert "(1 completed item not shown)" in fitted.text and "1. read the failing" not in fitted.text
    assert "[x] 2. find where" in fitted.text and "[>] 3." in fitted.text and "[ ] 4." in fitted.text
    assert fitted.kept == ("2", "3", "4", "5") and "(1 completed not sent)" in fitted.detail
    tighter = todo_block(ITEMS).content.fit(room(measure(fitted.text) - 5))
    assert "(2 completed items not shown)" in tighter.text and "\n[x]" not in tighter.text
    assert tighter.kept == ("3", "4", "5")


@pytest.mark.parametrize("allowance", range(0, 200, 3))
def test_never_over_its_room_and_the_item_in_progress_goes_last(allowance):
    fitted = todo_block(ITEMS).content.fit(room(allowance))
    if fitted.text:
        assert measure(fitted.text) <= allowance
        assert "\n[x]" not in fitted.text or "[ ] 4." in fitted.text  # nothing else goes before completed items
    else:
        assert allowance < 60  # too small even for the head and one cut line


def test_then_items_are_cut_from_the_end_then_the_last_text():
    fitted = todo_block(ITEMS).content.fit(room(60))
    assert fitted.kept == ("3",) and fitted.detail.endswith("(2 completed not sent, cut to fit)")
    assert "[>] 3. fix the key so it includes the locale\n</todo>" in fitted.text and "[ ] 4." not in fitted.text
    cut = todo_block(ITEMS).content.fit(room(52))
    assert cut.kept == ("3",) and "[>] 3. fix the key so it incl…\n</todo>" in cut.text


def make_agent(fake_server, workspace: Path, **env: str) -> Agent:
    environ = {"ZEPH_LLM_MAX_RETRIES": "0", "ZEPH_LLM_PROVIDER": "compatible", "ZEPH_LLM_BASE_URL": fake_server.url + "/v1",
               "ZEPH_LLM_MODEL": "gpt-4o", **env}
    config = load_config(env=environ).config
    agent = Agent(config=config, store=ConversationStore(open_database(database_path())),
                  provider=create_provider(resolve_settings(config, environ)), cwd=workspace)
    AGENTS.append(agent)
    return agent


async def test_a_long_list_at_an_8k_budget_keeps_to_its_share(fake_server, tmp_path):
    agent = make_agent(fake_server, tmp_path, ZEPH_MEMORY_CONTEXT_BUDGET_TOKENS="8000")
    await agent.start()
    conversation = agent.new_conversation("long task")
    message = agent.store.add_message(conversation.id, Message.text("assistant", "planning"))
    items = [TaskItem(str(n), f"step {n}: change module number {n} and run its tests again", "completed" if n < 20 else
                      "in_progress" if n == 20 else "pending") for n in range(1, 31)]
    TaskStore(agent.store.db).replace(conversation.id, items, opened_at=message.id, closed_at=message.id)
    report = agent.context_for(conversation)[1]
    row = report.block("todo")
    assert row is not None and 0 < row.tokens <= report.capacity * TODO_SHARE
    assert row.detail == "30 items, 1 in progress, 19 completed (19 completed not sent, cut to fit)"
    assert "20" in row.kept and not {"1", "2"} & set(row.kept)
