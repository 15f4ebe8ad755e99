"""memory_save and memory_search through the real agent, permission policy and store.

Zeus: memory tools are default in Agent mode and "Restricted" in Ask and Plan —
here only memory_search is offered there; saving is a write like any other and
goes through the same permission policy (asked about unless allowed).
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from zeph_cli.agent import ToolCallFinished
from zeph_cli.features.memory.long_term_access import LongTermMemory
from zeph_cli.paths import database_path
from zeph_cli.store import open_database
from zeph_cli.features.memory.long_term_store import MemoryStore
from zeph_cli.features.memory.tools import MAX_MEMORY_CHARS, MemorySaveTool, MemorySearchTool
from zeph_cli.tools.permissions import PermissionPolicy, approve_all
from tests.agent_helpers import close_agents  # noqa: F401  (autouse fixture)
from tests.test_agent_tools import OPENAI, make_agent, run
from tests.tool_helpers import ctx, fails, root  # noqa: F401  (fixtures)
from tests.tool_helpers import run as run_tool


@pytest.fixture
def project(tmp_path: Path) -> Path:
    root = tmp_path / "app"
    (root / ".git").mkdir(parents=True)
    return root


def stored() -> list:
    db = open_database(database_path())
    try:
        return MemoryStore(db).list(include_archived=True)
    finally:
        db.close()


def finished(events) -> list[ToolCallFinished]:
    return [e for e in events if isinstance(e, ToolCallFinished)]


def sent_results(fake_server, index: int) -> list[str]:
    return [content for _, content in OPENAI.sent_results(fake_server.requests_to(OPENAI.path)[index].json)]


SAVE = ("call_s", "memory_save", {"content": "The tests run with make test", "confidence": 0.9})


async def test_memory_save_without_anyone_to_approve_is_denied_and_nothing_is_saved(fake_server, project):
    fake_server.queue(OPENAI.tool_reply([SAVE]))
    fake_server.queue(OPENAI.text_reply("could not save"))
    agent = make_agent(OPENAI, fake_server, project)  # no approver: nobody to ask
    events = await run(agent, agent.new_conversation("x"), "remember how tests run")
    assert finished(events)[0].decision == "denied"
    assert "did not approve" in sent_results(fake_server, 1)[0]
    assert stored() == []


async def test_an_approved_memory_save_stores_a_project_memory_that_memory_search_finds(fake_server, project):
    fake_server.queue(OPENAI.tool_reply([SAVE]))
    fake_server.queue(OPENAI.text_reply("saved"))
    fake_server.queue(OPENAI.tool_reply([("call_q", "memory_search", {"query": "how do tests run"})]))
    fake_server.queue(OPENAI.text_reply("found"))
    asked: list = []

    async def approver(request):
        asked.append(request)
        return await approve_all(request)

    agent = make_agent(OPENAI, fake_server, project, approver=approver)
    conversation = agent.new_conversation("x")
    events = await run(agent, conversation, "remember how tests run")
    assert finished(events)[0].decision == "approved"
    assert asked[0].tool == "memory_save" and "The tests run with make test" in asked[0].preview
    (memory,) = stored()
    assert (memory.scope, memory.project_root, memory.source, memory.confidence) == (
        "project", os.path.realpath(project), "tool", 0.9
    )
    assert sent_results(fake_server, 1) == [f"<tool_output tool=\"memory_save\" untrusted=\"true\">\n"
                                            f"Saved memory #{memory.id} (project scope, confidence 0.9).\n</tool_output>"]

    events = await run(agent, conversation, "how do tests run here?")
    assert finished(events)[0].decision == "auto"  # a read: never asked about
    (found,) = sent_results(fake_server, 3)[-1:]
    assert f"#{memory.id} [project, confidence 0.9" in found and "make test" in found
    assert len(asked) == 1


async def test_an_allow_rule_lets_memory_save_run_without_asking(fake_server, project):
    fake_server.queue(OPENAI.tool_reply([SAVE]))
    fake_server.queue(OPENAI.text_reply("saved"))
    agent = make_agent(OPENAI, fake_server, project)  # nobody to ask, but a rule allows it
    agent.policy = PermissionPolicy.from_config(["memory_save"], [])
    events = await run(agent, agent.new_conversation("x"), "remember")
    assert finished(events)[0].decision == "allowed"
    assert [m.content for m in stored()] == ["The tests run with make test"]


@pytest.mark.parametrize("mode", ["ask", "plan"])
async def test_read_only_modes_offer_memory_search_but_not_memory_save(fake_server, project, mode):
    fake_server.queue(OPENAI.tool_reply([SAVE]))
    fake_server.queue(OPENAI.text_reply("no"))
    agent = make_agent(OPENAI, fake_server, project, approver=approve_all, mode=mode)
    events = await run(agent, agent.new_conversation("x"), "remember")
    names = OPENAI.sent_tool_names(fake_server.requests_to(OPENAI.path)[0].json)
    assert "memory_search" in names and "memory_save" not in names
    assert finished(events)[0].decision == "invalid"  # asked for anyway: refused, even with approve_all
    assert stored() == []


async def test_with_long_term_memory_off_neither_tool_is_offered(fake_server, project):
    fake_server.queue(OPENAI.text_reply("ok"))
    agent = make_agent(OPENAI, fake_server, project, ZEPH_MEMORY_LONG_TERM_ENABLED="false")
    await run(agent, agent.new_conversation("x"), "hi")
    names = OPENAI.sent_tool_names(fake_server.requests_to(OPENAI.path)[0].json)
    assert "read_file" in names and not {"memory_save", "memory_search"} & set(names)


# ---- arguments, one line each -----------------------------------------------------------------


@pytest.fixture
def memory_context(ctx, tmp_path: Path):
    db = open_database(tmp_path / "zeph.db")
    memories = LongTermMemory(MemoryStore(db), str(ctx.cwd), in_project=False)
    yield ctx.__class__(ctx.confinement, ctx.cwd, memories=memories), memories
    db.close()


async def test_memory_save_checks_its_arguments_with_one_line_errors(memory_context):
    context, memories = memory_context
    save = MemorySaveTool()
    assert "'scope' must be user, project or session, got 'team'" in await fails(save, context, content="x", scope="team")
    assert "'confidence' must be between 0 and 1, got 2" in await fails(save, context, content="x", confidence=2)
    assert "'content' is empty" in await fails(save, context, content="   ")
    assert f"keep one fact under {MAX_MEMORY_CHARS}" in await fails(save, context, content="x" * (MAX_MEMORY_CHARS + 1))
    assert "missing required argument 'content'" in await fails(save, context)
    assert "a session memory needs a session" in await fails(save, context, content="x", scope="session")
    assert memories.visible() == []


async def test_memory_save_defaults_to_user_scope_outside_a_project_and_saves_a_fact_once(memory_context):
    context, memories = memory_context
    first = await run_tool(MemorySaveTool(), context, content="Prefers tabs")
    again = await run_tool(MemorySaveTool(), context, content="Prefers tabs ")
    assert first.content.startswith("Saved memory #1 (user scope")
    assert again.content == "Already saved as memory #1 (user scope); nothing added."
    assert [m.scope for m in memories.visible()] == ["user"]


async def test_memory_search_ranks_with_ids_and_says_when_nothing_matches(memory_context):
    context, memories = memory_context
    memories.save("The test suite runs with make test", "user", 0.5, "cli")
    memories.save("Deploys go through fly", "user", 1.0, "cli")
    result = await run_tool(MemorySearchTool(), context, query="run the tests")
    assert result.content.splitlines() == [f"#1 [user, confidence 0.5, score {0.5 * (2 / 8**0.5) + 0.15 + 0.08:.2f}] "
                                           "The test suite runs with make test"]
    assert (await run_tool(MemorySearchTool(), context, query="kubernetes")).content == (
        "No saved memory matches 'kubernetes'."
    )
    assert "'query' is empty" in await fails(MemorySearchTool(), context, query=" ")


async def test_the_tools_fail_in_one_line_where_long_term_memory_is_not_available(ctx):
    assert "long-term memory is not available" in await fails(MemorySearchTool(), ctx, query="x")
    assert "long-term memory is not available" in await fails(MemorySaveTool(), ctx, content="x")
