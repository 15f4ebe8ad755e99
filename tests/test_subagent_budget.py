"""The task tool and the budget: a sub-agent gets `budget_share` of its parent's budget, and below 4,000
tokens it could read a file or two and run out, so the tool is not offered (the built-in tools and the
user's MCP tools keep that room); called anyway, it is refused saying what to raise."""

from __future__ import annotations

from zeph_cli.agent import ToolCallFinished
from tests.agent_helpers import close_agents  # noqa: F401  (autouse fixture)
from tests.test_subagents import PATH, make_agent, offered, run, text_reply, tool_reply, workspace  # noqa: F401


async def test_a_budget_too_small_to_share_leaves_the_task_tool_out_and_says_why(fake_server, workspace):  # noqa: F811
    fake_server.queue(tool_reply(("call_t", "task", {"description": "d", "prompt": "p"})), text_reply("fine"))
    agent = make_agent(fake_server, workspace, ZEPH_MEMORY_CONTEXT_BUDGET_TOKENS="7000")
    conversation = agent.new_conversation("small")
    events = await run(agent, conversation, "x")
    sent = offered(fake_server.requests_to(PATH)[0])
    assert "task" not in sent and "read_file" in sent
    (finished,) = [e for e in events if isinstance(e, ToolCallFinished)]
    assert finished.result.is_error
    assert "a sub-agent would get 3,500 tokens" in finished.result.content
    assert "raise [memory] context_budget_tokens or budget_share" in finished.result.content


async def test_a_larger_share_of_the_same_budget_offers_it(fake_server, workspace):  # noqa: F811
    fake_server.queue(text_reply("fine"))
    agent = make_agent(fake_server, workspace, ZEPH_MEMORY_CONTEXT_BUDGET_TOKENS="7000",
                       ZEPH_AGENT_SUBAGENTS_BUDGET_SHARE="0.6")
    await run(agent, agent.new_conversation("share"), "x")
    assert "task" in offered(fake_server.requests_to(PATH)[0])
